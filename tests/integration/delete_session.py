"""Deleting sessions from outside: DELETE over HTTP and the `delete` message; members
are told and leave; the name is free again. Usage: delete_session.py HTTP_URL WS_URL"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

import websockets

from checks import check, finish

HTTP, WS = sys.argv[1], sys.argv[2]


def request(method, path):
    r = urllib.request.Request(HTTP + path, method=method)
    try:
        with urllib.request.urlopen(r) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


async def until(ws, kind):
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if m["type"] == kind:
            return m


async def main():
    async with websockets.connect(WS) as member:
        await member.send(json.dumps({"type": "join", "session": "doomed", "create": True}))
        await until(member, "joined")
        status, body = request("DELETE", "api/sessions/doomed")
        check("DELETE /api/sessions/NAME is 200 deleted", status == 200 and body["type"] == "deleted" and body["session"] == "doomed", (status, body))
        told = await until(member, "deleted")
        check("its member is told", told["session"] == "doomed", told)
        status, _ = request("GET", "api/sessions/doomed")
        check("the session is gone (404)", status == 404, status)
        status, body = request("DELETE", "api/sessions/doomed")
        check("deleting it again is 404 unknown_session", status == 404 and body["code"] == "unknown_session", (status, body))
        await member.send(json.dumps({"type": "command", "session": "doomed", "id": 1, "ops": [{"op": "pop"}]}))
        err = await until(member, "error")
        check("a command to it is unknown_session (the member left it)", err["code"] == "unknown_session", err)

    async with websockets.connect(WS) as admin:
        await admin.send(json.dumps({"type": "join", "session": "doomed", "create": True}))
        joined = await until(admin, "joined")
        check("the name is free again: a new session at revision 0", joined["rev"] == 0, joined)
        await admin.send(json.dumps({"type": "delete", "session": "doomed", "id": "x"}))
        reply = await until(admin, "deleted")
        check("the delete message answers deleted with its id", reply.get("id") == "x" and reply["session"] == "doomed", reply)


asyncio.run(main())
finish("delete_session")
