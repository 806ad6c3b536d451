import ShowbatchBasics
/// Every manifest key with its type, default and meaning: the one list that both the decoder
/// (known keys, suggestions), the reference table in docs/manifest.md and the JSON Schema come from, so they cannot drift.
package enum ManifestReference {
    /// One documented key. `path` uses `.` for nesting, `[]` for list items and `<name>` for
    /// user-chosen keys.
    package struct Entry: Sendable {
        /// The key's path.
        package let path: String
        /// Its type.
        package let type: String
        /// Its default, or "required".
        package let defaultValue: String
        /// What it does.
        package let meaning: String
    }

    /// The entries in document order.
    package static let entries: [Entry] = [
        Entry(path: "version", type: "integer", defaultValue: "1", meaning: "Manifest format version; a higher version is an error."),
        Entry(path: "name", type: "string", defaultValue: "—", meaning: "The job's name: what its metrics are grouped by on a Pushgateway (`metrics.job` says it for the metrics alone). Without it, the manifest's file name without its folder, so `m.yaml`, `./m.yaml` and `/etc/showbatch/m.yaml` are one job."),
        Entry(path: "vault", type: "string", defaultValue: "required", meaning: "Vault id: letters and digits."),
        Entry(path: "environment", type: "string", defaultValue: "sandbox", meaning: "`sandbox` or `live`, optionally with `-region` parts (`live-eu-1`), any case."),
        Entry(path: "data_region", type: "string", defaultValue: "—", meaning: "Data region such as `eu-1`; not allowed when `environment` already names one. Empty (as `${NAME:-}` gives) means none, as in the SDKs."),
        Entry(path: "route_id", type: "string", defaultValue: "—", meaning: "Route id (Android SDK `routeId`): `https://<vault>-<route_id>.<environment>…`."),
        Entry(path: "hostname", type: "string", defaultValue: "—", meaning: "Custom hostname (CNAME), or `HOST:PORT` (a staging proxy on another port; port 1…65535, `:443` is the same as none). Scheme, path, query and trailing slashes are stripped; `http://` is an error. A port other than 443 is used as given, without the CNAME check. Empty (as `${NAME:-}` gives) means none, as in the SDKs."),
        Entry(path: "hostname_check", type: "boolean", defaultValue: "true", meaning: "Ask VGS whether the hostname is activated; if not, warn and use the vault URL (`--strict-hostname`: exit 3). `false` uses the hostname as given."),
        Entry(path: "hostname_fallback", type: "boolean", defaultValue: "false", meaning: "When the hostname check cannot be made (a network error) and the run is not on a terminal (cron, a pod), use the vault URL anyway; without it such a run stops before sending (exit 4). A hostname that is not activated always falls back, with a warning."),
        Entry(path: "satellite_port", type: "integer", defaultValue: "—", meaning: "Send every request to `http://localhost:PORT`. Only with `environment: sandbox` and no region, route id or hostname."),
        Entry(path: "vault_api", type: "mapping", defaultValue: "—", meaning: "Reveal through VGS's Vault API, up to 20 aliases a call, instead of one reveal-proxy request per row: every request then has `reveal` in place of `path`, `method` and `payload`. Not with `hostname`, `route_id` or `satellite_port`; `--base-url` and `--emulate` replace its host as they do the proxy's."),
        Entry(path: "vault_api.version", type: "integer", defaultValue: "required", meaning: "`2`: `GET https://<vault>.<environment>[-<region>].vault-api.verygoodvault.com/aliases?aliases=…`, with an OAuth 2.0 bearer token (`auth` with `client_id` and `client_secret`; `token_url` defaults to VGS's, and VGS must enable reveal for the vault; scope `aliases:read`). `1`: `GET https://api.<environment>[-<region>].verygoodvault.com/aliases?q=…`, with HTTP Basic (`auth.username` and `auth.password`: the vault's access credentials)."),
        Entry(path: "vault_api.aliases_per_call", type: "integer", defaultValue: "20", meaning: "Aliases a call asks for, 1…20 (the API refuses more): the aliases of consecutive rows share a call, each alias once. `concurrency` counts calls; a run starts at VGS's 3,000 calls a minute unless `rate_limit` says otherwise."),
        Entry(path: "vault_api.storage", type: "string", defaultValue: "—", meaning: "Version 2 only: `PERSISTENT` or `VOLATILE`, sent as `storage=` (the API's default is persistent)."),
        Entry(path: "headers", type: "mapping", defaultValue: "—", meaning: "Headers of every request. Values may use `${ENV_VAR}` and are never printed."),
        Entry(path: "concurrency", type: "integer", defaultValue: "8", meaning: "Requests in flight, 1…1024 (`--concurrency`)."),
        Entry(path: "rate_limit", type: "string", defaultValue: "—", meaning: "`N/s` or `N/m` across the whole run, retries included (`--rate`)."),
        Entry(path: "max_failed", type: "integer or percentage", defaultValue: "0", meaning: "Rows that are not ok (failed or partial) a run may end with and still exit 0, as a count (`25`) or a share of its rows (`0.1%`); they are written and counted all the same (`--max-failed`)."),
        Entry(path: "audit", type: "mapping", defaultValue: "—", meaning: "An audit trail: one JSON line appended per event (`run_started`, `output_finished`, `delivered`, `merged`, `stopped`) with PCI DSS 10.2.2's fields (when, what, outcome, who, where, what was touched) and `prev`, the SHA-256 of the line before it; `showbatch audit verify FILE` checks the chain. `--audit PATH` beats it."),
        Entry(path: "audit.path", type: "path", defaultValue: "required", meaning: "The trail's file (relative to the manifest's folder): created 0600 in a folder no other user can write, opened `O_APPEND` for each line and never through a link; locked while a line is added, so shards share one chain; where it stands after each line is recorded in the ledgers of the night-named outputs, and a trail cut short, moved away or rewritten there stops the next run (exit 3). A new file starts a new trail."),
        Entry(path: "audit.key", type: "string", defaultValue: "—", meaning: "A secret (`${NAME}` or `${file:PATH}`, at least 16 characters: `openssl rand -base64 32`) that keys the chain: each line's `prev` is then the HMAC-SHA256 of the line before it under the key, so no one without it can rewrite the trail and chain it again; `showbatch audit verify FILE --manifest M` checks it with the key."),
        Entry(path: "metrics", type: "mapping", defaultValue: "—", meaning: "How the run's metrics (`--metrics`, `--metrics-push`) are named."),
        Entry(path: "metrics.job", type: "string", defaultValue: "—", meaning: "Default: `name`, else the manifest's file name. The Pushgateway group's `job` (and the metrics file's `showbatch_job` label); a shard adds `shard`. One name for the job however its manifest path is typed, so a run by hand refreshes the scheduled run's series."),
        Entry(path: "resume_max_age", type: "duration", defaultValue: "12h", meaning: "`--resume=auto` goes on from a journal written within this long (by the time it records and by its file's time); an older one is another night's, and one from the future (more than 5 minutes ahead) has no age: either is started afresh."),
        Entry(path: "timeout", type: "duration", defaultValue: "60s", meaning: "Per attempt: `500ms`, `30s`, `2m` or a number of seconds (`--timeout`)."),
        Entry(path: "transport", type: "string", defaultValue: "curl", meaning: "`curl` (libcurl's multi interface, one event loop), the only transport; the key is kept for manifests that name it (`--transport`)."),
        Entry(path: "connections", type: "integer", defaultValue: "—", meaning: "Most connections per host, 1…1024 (`--connections`); without it, as many as `concurrency`. Over HTTP/2 requests share connections, as `curl --parallel` does."),
        Entry(path: "tls", type: "mapping", defaultValue: "—", meaning: "TLS verification (always on) and mutual TLS. Without `ca_file`/`ca_path`, `CURL_CA_BUNDLE`, `SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured, else the system's authorities."),
        Entry(path: "tls.ca_file", type: "path", defaultValue: "—", meaning: "PEM file of the certificate authorities to trust."),
        Entry(path: "tls.ca_path", type: "path", defaultValue: "—", meaning: "Folder of hashed PEM certificates (`c_rehash`) to trust."),
        Entry(path: "tls.client_cert", type: "path", defaultValue: "—", meaning: "Client certificate (PEM) for mutual TLS; needs `client_key`."),
        Entry(path: "tls.client_key", type: "path", defaultValue: "—", meaning: "The client certificate's private key (PEM, unencrypted)."),
        Entry(path: "auth", type: "mapping", defaultValue: "—", meaning: "A bearer token that renews: OAuth 2.0 client credentials (`token_url`…) or a `token_file`; or, for `vault_api` version 1, HTTP Basic (`username`, `password`). Sent as `Bearer <token>`; fetched before the first request, renewed before it expires and on a 401 (once for everyone). A token endpoint that is unavailable (5xx, 429, no connection) is asked again with backoff within `circuit.max_pause`; a refusal (400, 401…) stops the run. Never printed or journaled."),
        Entry(path: "auth.token_url", type: "string", defaultValue: "—", meaning: "The token endpoint (https; http only on loopback). Needs `client_id` and `client_secret`."),
        Entry(path: "auth.client_id", type: "string", defaultValue: "—", meaning: "The client id, usually `${ENV}`."),
        Entry(path: "auth.client_secret", type: "string", defaultValue: "—", meaning: "The client secret, usually `${ENV}`; never printed."),
        Entry(path: "auth.scope", type: "string", defaultValue: "—", meaning: "Scope to ask for."),
        Entry(path: "auth.audience", type: "string", defaultValue: "—", meaning: "Audience to ask for (Auth0 and others)."),
        Entry(path: "auth.client_auth", type: "string", defaultValue: "basic", meaning: "`basic` (HTTP Basic, which every server supports) or `body` (id and secret in the form)."),
        Entry(path: "auth.token_file", type: "path", defaultValue: "—", meaning: "A file holding the token, re-read when it changes (a sidecar, a projected Kubernetes token, a Secret mounted through links); instead of `token_url`. A token refused with 401 is waited for to change, within `circuit.max_pause`."),
        Entry(path: "auth.header", type: "string", defaultValue: "Authorization", meaning: "The header the token goes in."),
        Entry(path: "auth.username", type: "string", defaultValue: "—", meaning: "With `vault_api: {version: 1}` only: the vault's access credentials' username, sent with `password` as HTTP Basic (never printed)."),
        Entry(path: "auth.password", type: "string", defaultValue: "—", meaning: "The access credentials' password, usually `${file:PATH}`; never printed."),
        Entry(path: "circuit", type: "mapping", defaultValue: "—", meaning: "When the run stops or pauses because the failure is not the rows' (exit 4 when it stops)."),
        Entry(path: "circuit.failed_rows", type: "integer", defaultValue: "25", meaning: "Failed rows in a row (rows that could not be sent aside) that stop the run, 0…60; 0 never stops. Those rows are not written: `--resume` sends them."),
        Entry(path: "circuit.outage_after", type: "integer", defaultValue: "3", meaning: "Failed rows among the recent rows (at least this many, and half of them) that mean the endpoint is down: sending pauses while one request probes it, 0…100; 0 never pauses. A row counts once, by its latest attempt (network, timeout, a 5xx in `retry.on`); the attempts that failed as the pause opened are made again and do not count."),
        Entry(path: "circuit.max_pause", type: "duration", defaultValue: "300s", meaning: "The longest pause (an outage, refused fresh tokens, an unavailable token endpoint) before the run stops."),
        Entry(path: "retry", type: "mapping", defaultValue: "—", meaning: "Retry policy."),
        Entry(path: "retry.attempts", type: "integer", defaultValue: "3", meaning: "Total attempts per request, 1…100 (1 = no retry)."),
        Entry(path: "retry.backoff", type: "duration", defaultValue: "200ms", meaning: "Base of the capped exponential backoff with full jitter."),
        Entry(path: "retry.max_backoff", type: "duration", defaultValue: "10s", meaning: "Cap of the backoff. A `Retry-After` answer is honoured instead (up to 10 minutes)."),
        Entry(path: "retry.on", type: "list", defaultValue: "[429, 502, 503, 504, network, timeout]", meaning: "HTTP statuses and failure kinds (`network`, `timeout`) that are retried. With 429 in it, a 429 slows the whole run down and is sent again without using an attempt; it never fails a row."),
        Entry(path: "output", type: "mapping", defaultValue: "—", meaning: "Where rows go when neither `--output` nor the request says."),
        Entry(path: "output.path", type: "string", defaultValue: "required", meaning: "The file, relative to the manifest's folder; may hold `{shard}`, and in its file name `${run.date}` (the night's date, `YYYYMMDD`: `--date`, else today in `TZ`) and `${run.seq}` (the night's number for this output: up by one each new night, kept by a rerun; `${run.seq:6}` zero-pads it to 6 digits), kept in the output's folder (`.NAME.sequence`)."),
        Entry(path: "output.format", type: "string", defaultValue: "extension", meaning: "`csv`, `json` or `jsonl`; without it the extension decides (`.csv`, `.json`, `.jsonl`/`.ndjson`)."),
        Entry(path: "output.columns", type: "list", defaultValue: "fixed + labels", meaning: "The columns in order: a label, a fixed column (`request`, `status`, `http_status`, `attempts`, `error`), or `{NAME: TEMPLATE}` — a template of `${row.COLUMN}`, `${index}`, `${request}` (from the data row, never sent), a bare label or fixed-column name to rename it, or `{text: …}` for a constant. Default: the fixed columns, then every label."),
        Entry(path: "output.rejects", type: "path", defaultValue: "—", meaning: "Failed rows go to this file instead (the fixed columns, then the data row's columns); `path` keeps the rows a processor should get."),
        Entry(path: "output.header", type: "template", defaultValue: "—", meaning: "One line written before the first row (before the CSV header line), for a processor's header record: text with `${run.rows}` (rows in the file), `${run.date}`, `${run.seq}` (needs `${run.seq}` in `path`), `${run.sum.NAME}` (the exact decimal sum of output column `NAME`) and environment references; `$${` writes `${`. CSV and JSON Lines only; inside the encryption; the same after `--resume`, `--retry-failed` and `merge` as after one run."),
        Entry(path: "output.trailer", type: "template", defaultValue: "—", meaning: "One line written after the last row, as `header`: the processor's trailer record with the count and hash totals, such as `TRL,${run.rows},${run.sum.amount}`. A summed cell that is not a decimal number (`-12.50`, `7`; no exponent, no thousands separator) fails its row with error 1410, its cell empty; an empty cell adds nothing."),
        Entry(path: "output.compress", type: "string", defaultValue: "extension", meaning: "`gzip` or `none`; without it a path ending in `.gz` is gzip. Written as one gzip member per checkpoint, so it resumes; `--retry-failed` rewrites it from its rows."),
        Entry(path: "output.reject_partial", type: "boolean", defaultValue: "true with rejects", meaning: "Partial rows (a label not found) go to `rejects` too, so the processor's file holds only complete rows; `false` keeps them in the output."),
        Entry(path: "output.encrypt", type: "mapping", defaultValue: "—", meaning: "Write the output (and its rejects and binary label files) as one OpenPGP message to the recipients, never in the clear on disk: while the run lasts `.partial` is sealed (AES-256-GCM chunks under a random data key). The path ends in `.pgp`, `.gpg` or `.asc`; the format comes from the extension before it (`cards.csv.pgp`, `rows.jsonl.gz.pgp`)."),
        Entry(path: "output.encrypt.recipients", type: "list", defaultValue: "required", meaning: "Files of armored or binary OpenPGP public keys (relative to the manifest's folder); each can decrypt. Checked by `validate`: a readable public key that can encrypt."),
        Entry(path: "output.encrypt.state_key", type: "string", defaultValue: "—", meaning: "32 random bytes in base64 (`openssl rand -base64 32`), usually `${SHOWBATCH_STATE_KEY}`: wraps the data key in the journal, so `--resume` can go on and `merge` can read shards. Without it the data key lives in memory only, an interrupted run starts over, and `--shard` is refused."),
        Entry(path: "output.encrypt.fingerprints", type: "list", defaultValue: "—", meaning: "Pins the recipients: each recipient's key must have one of these fingerprints (40 hex digits, as `gpg --fingerprint` prints them; spaces allowed), so a key file swapped for another key is refused by `validate` and every run."),
        Entry(path: "output.encrypt.warn_expiry", type: "days", defaultValue: "30d", meaning: "A recipient key that expires within this many days is a warning on every run (and `merge`), and its expiry is a metric (`showbatch_key_expiry_timestamp_seconds`), so nobody learns it from the processor; `0d`: no warning."),
        Entry(path: "output.encrypt.sign", type: "mapping", defaultValue: "—", meaning: "Sign each message with our key as it is encrypted (one OpenPGP message: `gpg --decrypt` shows a good signature by it). Checked by every run and `merge` before anything is sent: a secret key that can sign, unlocked by its passphrase; it expiring within `warn_expiry` is a warning and a metric, as a recipient's is."),
        Entry(path: "output.encrypt.sign.key_file", type: "path", defaultValue: "required", meaning: "Our secret key, armored or binary (`gpg --export-secret-keys --armor FPR`); one key. A Secret mount through links is fine; it is imported into the run's private GnuPG home only, removed when the run ends."),
        Entry(path: "output.encrypt.sign.passphrase", type: "string", defaultValue: "—", meaning: "The key's passphrase, usually `${SIGNING_KEY_PASSPHRASE}`: given to gpg-agent through loopback pinentry, never printed."),
        Entry(path: "output.encrypt.armor", type: "boolean", defaultValue: "false", meaning: "ASCII-armored OpenPGP (`.asc`) instead of binary."),
        Entry(path: "output.deliver", type: "mapping", defaultValue: "—", meaning: "Upload the finished file by SFTP once: under a temporary name no one else knows (`.NAME.<random>.part`), its kind and size checked in the folder's listing, then renamed to its own name; the night's ledger records the rename as asked for, then as done, so no rerun sends it again (`NAME.delivered` beside the output is a copy). Needs `${run.date}` or `${run.seq}` in `path`. A delivery that failed is exit 5 (the next run or `showbatch deliver` delivers it without revealing anything again); one only a person can fix is exit 6."),
        Entry(path: "output.deliver.sftp", type: "string", defaultValue: "required", meaning: "`sftp://host[:port]/folder/`, the folder ending in `/` (`/~/…` is in the user's home); no user or password in it."),
        Entry(path: "output.deliver.user", type: "string", defaultValue: "required", meaning: "The SSH user."),
        Entry(path: "output.deliver.key_file", type: "path", defaultValue: "required", meaning: "The private key (OpenSSH or PEM; a Secret mounted through links is fine)."),
        Entry(path: "output.deliver.passphrase", type: "string", defaultValue: "—", meaning: "The private key's passphrase, usually `${SFTP_KEY_PASSPHRASE}`."),
        Entry(path: "output.deliver.known_hosts", type: "path", defaultValue: "required", meaning: "An OpenSSH known hosts file holding the server's host key (`[host]:port` for a port other than 22); a host key not in it is refused with nothing uploaded: no trust on first use."),
        Entry(path: "output.deliver.done", type: "string", defaultValue: "—", meaning: "A trigger file written in the folder after the file is in place (empty); `${file}` is the delivered file's name, and `${run.date}`/`${run.seq}` are allowed (`${file}.done`)."),
        Entry(path: "output.csv", type: "mapping", defaultValue: "—", meaning: "CSV options."),
        Entry(path: "output.csv.delimiter", type: "string", defaultValue: "`,`", meaning: "`,`, `;`, `|` or tab (`\\t` or `tab`)."),
        Entry(path: "output.csv.line_ending", type: "string", defaultValue: "lf", meaning: "`lf` or `crlf` (RFC 4180)."),
        Entry(path: "output.csv.header", type: "boolean", defaultValue: "true", meaning: "Write the header line."),
        Entry(path: "output.csv.quote", type: "string", defaultValue: "minimal", meaning: "`minimal` (cells holding the delimiter, a quote or a line break) or `all`."),
        Entry(path: "output.csv.escape_formulas", type: "boolean", defaultValue: "false", meaning: "Prefix with `'` a cell that starts with `=` `+` `-` `@`, tab or CR, as OWASP advises, unless it is a plain number (`-12.50`, `+5`, `1e3`)."),
        Entry(path: "emulator", type: "mapping", defaultValue: "—", meaning: "Used only by `run --emulate`."),
        Entry(path: "emulator.aliases", type: "mapping or path", defaultValue: "sample aliases", meaning: "Alias → value, or a file (CSV `alias,value` with a header, or a JSON object)."),
        Entry(path: "emulator.latency", type: "duration", defaultValue: "0", meaning: "Delay of every answer: `D` or `D±J`."),
        Entry(path: "emulator.fail_rate", type: "number", defaultValue: "0", meaning: "Fraction of requests answered with `fail_status`."),
        Entry(path: "emulator.fail_status", type: "integer", defaultValue: "500", meaning: "Status of injected failures."),
        Entry(path: "emulator.throttle", type: "string", defaultValue: "—", meaning: "`N/s` or `N/m`; past it, 429 with `Retry-After: 1`."),
        Entry(path: "emulator.drop_rate", type: "number", defaultValue: "0", meaning: "Fraction of requests whose connection is closed without an answer."),
        Entry(path: "emulator.malformed_rate", type: "number", defaultValue: "0", meaning: "Fraction of requests answered 200 with a body that is not JSON."),
        Entry(path: "emulator.response", type: "mapping", defaultValue: "—", meaning: "The JSON object the emulator answers, in your route's own shape; a string `${body.PATH}` (dotted keys, array indexes as numbers) is the value at PATH in the request's JSON body, aliases revealed, and `${body.PATH}` inside a longer string is its text. Without it: the echo `{\"json\": body, \"method\", \"path\", \"headers\"}`."),
        Entry(path: "emulator.seed", type: "integer", defaultValue: "1", meaning: "Seed of the fault choices: the same seed gives the same faults."),
        Entry(path: "emulator.outage", type: "mapping", defaultValue: "—", meaning: "An outage: every request answered 503 for a while."),
        Entry(path: "emulator.outage.after", type: "integer", defaultValue: "—", meaning: "Requests answered before the outage starts."),
        Entry(path: "emulator.outage.for", type: "duration", defaultValue: "—", meaning: "How long it lasts."),
        Entry(path: "emulator.auth", type: "mapping", defaultValue: "—", meaning: "The emulator as an OAuth 2.0 server: tokens from `POST /oauth/token`, 401 without a valid one. With `auth` in the manifest, `--emulate` turns it on for any client."),
        Entry(path: "emulator.auth.client_id", type: "string", defaultValue: "—", meaning: "The client id it accepts; without it, any."),
        Entry(path: "emulator.auth.client_secret", type: "string", defaultValue: "—", meaning: "The client secret it accepts."),
        Entry(path: "emulator.auth.token_uses", type: "integer", defaultValue: "—", meaning: "Requests a token is good for before it is refused with 401 (as if it expired)."),
        Entry(path: "emulator.auth.expires_in", type: "integer", defaultValue: "—", meaning: "The `expires_in` (seconds) its tokens state."),
        Entry(path: "requests", type: "list", defaultValue: "required", meaning: "The requests; rows are written in this order."),
        Entry(path: "requests[].name", type: "string", defaultValue: "required", meaning: "Row name, unique among static requests; templates allowed."),
        Entry(path: "requests[].path", type: "string", defaultValue: "required", meaning: "Path with an optional `?query` (kept as written); templates allowed. Not with `reveal`."),
        Entry(path: "requests[].method", type: "string", defaultValue: "post", meaning: "`get`, `post`, `put`, `patch` or `delete`, any case; `get` takes no payload."),
        Entry(path: "requests[].headers", type: "mapping", defaultValue: "—", meaning: "Merged over the manifest headers, case-insensitively (the request wins)."),
        Entry(path: "requests[].payload", type: "mapping", defaultValue: "—", meaning: "Sent as a JSON object; strings may use templates."),
        Entry(path: "requests[].reveal", type: "mapping", defaultValue: "—", meaning: "With `vault_api` (and only then), in place of `path`, `method` and `payload`: label name → the alias to reveal, usually `${row.COLUMN}`; each label's value is its alias's revealed value, and the labels are the output's columns. An alias the answer does not hold fails its own row (1408 not_revealed); an alias that is empty or has a character no alias has (not a letter, digit, `_`, `-` or `.`) fails its row unsent (1490). `labels` may give these names `transform`, `mask`, `expect`, `file` and `decode`, without `path`."),
        Entry(path: "requests[].reveal.<name>", type: "string", defaultValue: "—", meaning: "The alias for label `<name>`; templates allowed."),
        Entry(path: "requests[].labels", type: "mapping", defaultValue: "—", meaning: "Label name → content path (short form) or a binding; names become output columns."),
        Entry(path: "requests[].labels.<name>.path", type: "string", defaultValue: "required", meaning: "Content path: dot-separated keys, integer segments index arrays, `\\.` is a literal dot."),
        Entry(path: "requests[].labels.<name>.transform", type: "list", defaultValue: "—", meaning: "Replacements applied in order, every match replaced."),
        Entry(path: "requests[].labels.<name>.transform[].regex", type: "string", defaultValue: "required", meaning: "ICU regular expression."),
        Entry(path: "requests[].labels.<name>.transform[].template", type: "string", defaultValue: "required", meaning: "The regex engine's replacement, as Java's `Matcher.replaceAll` reads it: `$1` is the first group (as many digits as still name a group), `${name}` the group `(?<name>…)`, `\\` makes the next character literal (`\\$` a dollar sign). Never a manifest template: `${NAME}` reads no environment variable. A group the regex does not have is an error."),
        Entry(path: "requests[].labels.<name>.mask", type: "boolean or mapping", defaultValue: "—", meaning: "`true` masks everything; a mapping masks ranges. Runs after the transforms."),
        Entry(path: "requests[].labels.<name>.mask.ranges", type: "list", defaultValue: "everything", meaning: "Closed `[start, end]` ranges over characters; `null` is the start or the end; an end past the value is clamped; a negative bound or an end before the start is an error (it would leave the value unmasked)."),
        Entry(path: "requests[].labels.<name>.mask.symbol", type: "string", defaultValue: "*", meaning: "One character; `\"\"` disables the mask."),
        Entry(path: "requests[].labels.<name>.decode", type: "string", defaultValue: "—", meaning: "`base64`: the value (after `transform`) is base64 (standard or URL-safe alphabet, padding optional, line breaks ignored) and its bytes are written to `file`; the cell holds the file's path. Needs `file`; no `mask`. Not base64: error 1404."),
        Entry(path: "requests[].labels.<name>.file", type: "string", defaultValue: "—", meaning: "The file the decoded bytes go to, relative to the folder of the row's output and inside it (mode 0600, written to a temporary name and renamed); `${row.COLUMN}`, `${index}` and `${request}` allowed, each value one part of a name (`/` and `%` percent-encoded). Needs `decode`."),
        Entry(path: "requests[].labels.<name>.max_bytes", type: "integer or size", defaultValue: "—", meaning: "The most bytes a decoded value may have (`1048576`, `512KiB`, `5MiB`); over it, error 1405 and no file."),
        Entry(path: "requests[].labels.<name>.revealed", type: "string", defaultValue: "`required`", meaning: "`required`: a value equal to a string the request's payload sent (an alias the vault does not know comes back unchanged) was not revealed, and the row fails with error 1408, its cell empty, so it goes to `rejects`. `optional`: the label may echo an input on purpose (an order number, a reference)."),
        Entry(path: "requests[].labels.<name>.expect", type: "mapping", defaultValue: "—", meaning: "What the value must look like after `transform` (before `mask`); a value that fails makes the row `failed` with error 1407, its cell empty (the value is never written or printed), so it goes to `rejects`. Not with `decode`."),
        Entry(path: "requests[].labels.<name>.expect.pattern", type: "string", defaultValue: "—", meaning: "ICU regular expression the whole value must match (`\\d{13,19}`): an alias the proxy did not know, which comes back unchanged, does not."),
        Entry(path: "requests[].labels.<name>.expect.luhn", type: "boolean", defaultValue: "false", meaning: "The value must pass the Luhn check of card numbers: digits (at least two), with spaces and hyphens between them ignored; any other character fails."),
        Entry(path: "requests[].each", type: "mapping", defaultValue: "—", meaning: "One request per data row, streamed."),
        Entry(path: "requests[].each.csv", type: "path", defaultValue: "—", meaning: "CSV file with a header line (RFC 4180, BOM allowed)."),
        Entry(path: "requests[].each.jsonl", type: "path", defaultValue: "—", meaning: "JSON Lines file of objects (blank lines ignored)."),
        Entry(path: "requests[].output", type: "mapping", defaultValue: "—", meaning: "This request's own output; the same keys as `output`."),
    ]

    /// The keys directly under `parent` ("" for the top level), in document order.
    package static func keys(under parent: String) -> [String] {
        entries.compactMap { entry in
            if parent.isEmpty { return entry.path.contains(where: { $0 == "." || $0 == "[" }) ? nil : entry.path }
            for separator in [".", "[]."] where entry.path.hasPrefix(parent + separator) {
                let rest = entry.path.dropFirst(parent.count + separator.count)
                return rest.contains(where: { $0 == "." || $0 == "[" }) ? nil : String(rest)
            }
            return nil
        }
    }

    /// The Markdown table for the README.
    package static var markdown: String {
        var lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for entry in entries {
            lines.append("| `\(entry.path)` | \(entry.type) | \(entry.defaultValue == "—" ? "—" : "`\(entry.defaultValue)`") | \(entry.meaning) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
