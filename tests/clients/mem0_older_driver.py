"""Run by tests/clients/test_mem0_older_live.py in a process of its own, whose ``PYTHONPATH``
puts an older ``mem0ai`` (1.0 or 0.1, unpacked from the package registry's wheel) before the
installed one: every public memory call of that client against the live server, as its users
write them (entity ids as arguments, no ``filters`` needed). Prints what it saw as JSON.

    python mem0_older_driver.py <base url> <service key> <user key> <user> <tag>
"""

import asyncio
import json
import sys

import mem0
from mem0 import AsyncMemoryClient, MemoryClient


def outcome(call):
    """The answer, or the name of what the client raised."""
    try:
        return {"ok": call()}
    except Exception as error:
        return {"raised": type(error).__name__, "message": str(error)[:300]}


def _results(answer):
    return answer["results"] if isinstance(answer, dict) else answer


async def _searched(key: str, base: str, user: str, tag: str):
    client = AsyncMemoryClient(api_key=key, host=base)
    return await client.search("oolong tea", user_id=user, agent_id=tag)


def main(base: str, service_key: str, user_key: str, user: str, tag: str) -> dict:
    svc = MemoryClient(api_key=service_key, host=base)
    own = MemoryClient(api_key=user_key, host=base)
    seen: dict = {"version": mem0.__version__, "org_id": svc.org_id, "project_id": svc.project_id}
    added = svc.add(
        [{"role": "user", "content": f"I drink oolong tea every morning {tag}"}],
        user_id=user,
        agent_id=tag,
        infer=False,
    )
    seen["added"] = added
    (first,) = added["results"]
    svc.add(f"My sister lives in Lisbon {tag}", user_id=user, agent_id=tag, infer=False)
    seen["get"] = svc.get(first["id"])
    seen["get_all"] = svc.get_all(user_id=user, agent_id=tag)
    seen["get_all_v2_filters"] = svc.get_all(
        version="v2", filters={"AND": [{"user_id": user}, {"agent_id": tag}]}, page=1, page_size=50
    )
    seen["search"] = svc.search("oolong tea", user_id=user, agent_id=tag)
    seen["async_search"] = asyncio.run(_searched(service_key, base, user, tag))
    seen["search_v2_filters"] = svc.search(
        "oolong tea", version="v2", filters={"AND": [{"user_id": user}, {"agent_id": tag}]}, top_k=5
    )
    seen["update"] = svc.update(first["id"], text=f"I drink green tea every morning {tag}")
    seen["history"] = svc.history(seen["update"]["id"])
    seen["users"] = own.users()
    seen["own_get_all"] = own.get_all(user_id=user, agent_id=tag)
    seen["own_names_another"] = outcome(lambda: own.get_all(user_id="alice"))
    seen["own_adds_for_another"] = outcome(lambda: own.add("I am alice now", user_id="alice", infer=False))
    seen["alice_after"] = svc.get_all(user_id="alice")
    listed = [m["id"] for m in _results(svc.get_all(user_id=user, agent_id=tag))]
    seen["batch_update"] = svc.batch_update([{"memory_id": listed[-1], "text": f"Updated in a batch {tag}"}])
    seen["batch_delete"] = svc.batch_delete([{"memory_id": seen["batch_update"]["results"][0]["id"]}])
    svc.add(f"I like figs {tag}", user_id=user, agent_id=f"{tag}-other", infer=False)
    seen["delete_users"] = svc.delete_users(agent_id=f"{tag}-other")
    seen["other_after"] = svc.get_all(user_id=user, agent_id=f"{tag}-other")
    seen["delete"] = svc.delete(seen["update"]["id"])
    svc.add(f"I like plums {tag}", user_id=user, agent_id=tag, infer=False)
    seen["delete_all"] = svc.delete_all(user_id=user, agent_id=tag)
    seen["after"] = svc.get_all(user_id=user, agent_id=tag)
    return seen


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:6])))
