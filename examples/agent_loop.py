"""A scripted agent that remembers across two conversations (docs/quickstart-agents.md).

MEMSVC_URL=http://127.0.0.1:8000 MEMSVC_TOKEN=<service key> .venv/bin/python examples/agent_loop.py alice
"""

import sys

from memsvc import Client, data_text

user = sys.argv[1] if len(sys.argv) > 1 else "alice"
with Client.from_env() as client:
    # Monday: the user states a preference; the agent notes it in the user's notes file.
    chat = client.create_conversation(user, title="Planning the billing service")
    with client.run(chat, prompt="Use PostgreSQL 16 for billing, please remember that.") as run:
        run.add_message("user", "We use PostgreSQL 16 for the billing service; please remember that.")
        run.remember("- Billing service database: PostgreSQL 16 (decided by the user).")
        run.add_message("assistant", "Noted: PostgreSQL 16 for billing.")

    # Tuesday, a new conversation: the note is in the run's context, the old turn in its history.
    chat = client.create_conversation(user, title="Billing migrations")
    question = "Which database does the billing service use?"
    with client.run(chat, prompt=question) as run:
        run.add_message("user", question)
        notes = [s["content"] for s in run.context(question)["sections"] if s["name"] == "memory"]
        hits = run.search_history("billing database")["results"]
        answer = "PostgreSQL 16, as you decided." if any("PostgreSQL 16" in n for n in notes) else "I don't know yet."
        run.add_message("assistant", answer)
    print(answer)
    # Stored text comes marked as data line by line; data_text shows it as it was written.
    print("found in:", ", ".join(sorted({data_text(h["thread_title"]) for h in hits if h["thread_id"] != chat["id"]})))
