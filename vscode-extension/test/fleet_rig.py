"""A fleet for the extension's tests, as workers on other machines leave it: a real PostgreSQL
(flower.sim.postgres), two runs submitted through the fleet's own API, one of them taken by a
worker "a" and asking a question. Prints one JSON line (the database's URL and password, the
runs), then answers a command per line on stdin with a JSON line:

    submit          another run submitted ({"run": id})
    show RUN        the run's state and its questions' states and answers

The database is stopped and removed when stdin closes.
"""

from __future__ import annotations

import json
import sys

from flower.fleet import Fleet, RunRequest
from flower.fleet.records import FleetBook
from flower.sim.postgres import LocalPostgres

QUESTION = "hello.py 要打印什么?"


def main() -> None:
    with LocalPostgres() as pg:
        url = pg.create_database("fleet")
        fleet = Fleet(url)

        def submit(ask: str) -> str:
            return fleet.submit(RunRequest("/srv/repo.git", "main", ask))

        asks, queued = submit("写一个 hello.py"), submit("写一个 bye.py")
        book = FleetBook(url)
        execution = book.begin_execution(asks, "a", 11)
        book.set_state(asks, "running", worker="a")
        book.ask(asks, execution, "q1", QUESTION, ["hello"])
        say({"url": url, "password": pg.password, "asks": asks, "queued": queued, "question": QUESTION})
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            if command == "submit":
                say({"run": submit("写一个 later.py")})
            elif command == "show":
                detail = fleet.show(arg)
                questions = [[q.state, q.answer] for q in detail.questions]
                say({"state": detail.summary.state, "questions": questions})


def say(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
