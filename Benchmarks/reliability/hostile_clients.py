#!/usr/bin/env python3
"""Hostile clients for `pinlab-reliability hostile`: N connections to 127.0.0.1:PORT in three kinds, round robin:

  silent   connects and never sends a byte
  trickle  sends a real ClientHello one byte a second
  stalled  sends a whole ClientHello, reads the server's first flight, then stops (mid-handshake)

    hostile_clients.py PORT N

Waits for a line on stdin before connecting, prints `ready OPEN` once all N are connected (and every stalled one has
read the server's answer), then keeps trickling until the server closes each connection. Prints `closed K` when all
are closed by the server (or stdin reaches EOF) and exits.
"""
import asyncio, resource, ssl, sys, time

port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < n + 100:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1000), hard))


def client_hello():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


HELLO = client_hello()
closed_by_server = 0
connected = 0


async def one(kind, ready):
    global closed_by_server, connected
    for attempt in range(50):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            break
        except OSError:
            await asyncio.sleep(0.05 * (attempt + 1))
    else:
        ready.set_result(False) if not ready.done() else None
        return
    try:
        if kind == "stalled":
            writer.write(HELLO)
            await writer.drain()
            await reader.read(1)  # the server's first flight began
        connected += 1
        ready.set_result(True)
        if kind == "trickle":
            for b in HELLO:
                writer.write(bytes([b]))
                await writer.drain()
                if reader.at_eof():
                    break
                try:
                    data = await asyncio.wait_for(reader.read(4096), 1.0)
                    if not data:
                        break
                except asyncio.TimeoutError:
                    pass
        while await reader.read(4096):
            pass
        closed_by_server += 1
    except (ConnectionError, OSError):
        closed_by_server += 1
        if not ready.done():
            ready.set_result(False)
    finally:
        writer.close()


async def main():
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    kinds = ["silent", "trickle", "stalled"]
    tasks, readies = [], []
    for i in range(n):
        f = loop.create_future()
        readies.append(f)
        tasks.append(asyncio.create_task(one(kinds[i % 3], f)))
        if i % 200 == 199:
            await asyncio.sleep(0)  # let the listen queue drain
    await asyncio.gather(*readies)
    print(f"ready {connected}", flush=True)
    await asyncio.gather(*tasks)
    print(f"closed {closed_by_server}", flush=True)


asyncio.run(main())
