#!/usr/bin/env python3
"""The aiohttp peer of throughput.py: POSTs N requests with at most C in flight over one session,
reads each JSON answer and takes json.card_number, as a Python batch script would.

usage: aiohttp_peer.py URL REQUESTS CONCURRENCY
"""
import asyncio
import sys

import aiohttp

BODY = {"card_number": "tok_sandbox_abc", "exp_date": "tok_sandbox_def"}


async def main(url, requests, concurrency):
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        semaphore = asyncio.Semaphore(concurrency)
        failures = 0

        async def one():
            nonlocal failures
            async with semaphore:
                async with session.post(url, json=BODY) as response:
                    answer = await response.json(content_type=None)
                    if response.status != 200 or "card_number" not in answer.get("json", {}):
                        failures += 1

        await asyncio.gather(*(one() for _ in range(requests)))
    if failures:
        sys.exit(f"{failures} requests failed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
