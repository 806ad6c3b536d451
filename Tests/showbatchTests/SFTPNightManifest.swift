/// A night's export of two cards delivered by SFTP with a trigger file, the server's settings
/// from the environment (`SB_SFTP_URL`, `SB_SFTP_USER`, `SB_SFTP_KEY`, `SB_KNOWN_HOSTS`);
/// `timeout` and `retry` as given.
func sftpNightManifest(timeout: String? = nil, retry: String = "{attempts: 2, backoff: 50ms, max_backoff: 100ms}") -> String {
    """
    vault: tnt1
    \(timeout.map { "timeout: \($0)\n" } ?? "")retry: \(retry)
    output:
      path: "out/cards-${run.date}-${run.seq:4}.csv"
      columns: [{id: "${row.id}"}, card]
      deliver:
        sftp: "${SB_SFTP_URL}"
        user: "${SB_SFTP_USER}"
        key_file: "${SB_SFTP_KEY}"
        known_hosts: "${SB_KNOWN_HOSTS}"
        done: "${file}.done"
    emulator:
      aliases: {tok_a: "4111111111111111", tok_b: "5555555555554444"}
    requests:
      - name: "c-${row.id}"
        each: {csv: in/customers.csv}
        path: /post
        payload: {card: "${row.alias}"}
        labels: {card: json.card}
    """
}
