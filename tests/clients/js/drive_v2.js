// mem0's JavaScript client of the 2.x line (npm mem0ai@2, installed as "mem0ai-v2", unchanged)
// against a live server: its calls take snake_case options and reach the older paths (/v1/memories/,
// /v2/memories/, /v1/memories/search/), whose types read lists. Run by
// tests/clients/test_mem0_js_live.py; prints what it saw as JSON.
//
//   node drive_v2.js <base url> <alice's key> <bob's key> <service key> <tag>
const { outcome, run } = require("./common");
const { MemoryClient } = require("mem0ai-v2");

async function main([base, aliceKey, bobKey, serviceKey, tag]) {
  const alice = new MemoryClient({ apiKey: aliceKey, host: base });
  const bob = new MemoryClient({ apiKey: bobKey, host: base });
  const svc = new MemoryClient({ apiKey: serviceKey, host: base });
  const forged = new MemoryClient({ apiKey: "not-a-key", host: base });
  const seen = {
    ping: await outcome(async () => (await alice.ping(), "ok")),
    forgedPing: await outcome(async () => (await forged.ping(), "ok")),
  };
  const mine = { user_id: "alice", agent_id: tag };
  seen.added = await alice.add([{ role: "user", content: `I keep bees in the garden ${tag}` }], {
    ...mine, metadata: { topic: "garden" }, infer: false,
  });
  seen.wrapped = await alice.add(`I play the oboe ${tag}`, { agent_id: tag, infer: false, output_format: "v1.1" });
  seen.third = await svc.add(`I swim on Tuesdays ${tag}`, { ...mine, run_id: `${tag}/run`, infer: false });
  const first = seen.added[0].id;
  seen.get = await alice.get(first);
  seen.getAll = await alice.getAll(mine);
  seen.getAllV2 = await alice.getAll({ api_version: "v2", filters: { AND: [{ user_id: "alice" }, { agent_id: tag }] } });
  seen.firstPage = await alice.getAll({ ...mine, page: 1, page_size: 2 });
  seen.firstPageV2 = await alice.getAll({ api_version: "v2", filters: { agent_id: tag }, page: 1, page_size: 2 });
  seen.search = await alice.search("bees in the garden", { ...mine, top_k: 5 });
  seen.searchV2 = await alice.search("bees", {
    api_version: "v2", filters: { AND: [{ user_id: "alice" }, { metadata: { topic: "garden" } }] },
  });
  seen.update = await alice.update(first, { text: `I keep two hives in the garden ${tag}` });
  seen.history = await alice.history(seen.update.id);
  seen.users = await alice.users();
  const ids = (await alice.getAll(mine)).map((m) => m.id);
  seen.batchUpdate = await alice.batchUpdate([{ memoryId: ids[0], text: `Updated in a batch ${tag}` }]);
  // bob's key: alice is no one it may name, her ids are not its to read or change
  seen.beforeBob = await alice.getAll(mine);
  seen.bobNamesAlice = await outcome(() => bob.getAll({ user_id: "alice" }));
  seen.bobSearchesAlice = await outcome(() => bob.search("bees", { user_id: "alice" }));
  seen.bobSearchesAliceV2 = await outcome(() => bob.search("bees", { api_version: "v2", filters: { user_id: "alice" } }));
  seen.bobAddsForAlice = await outcome(() => bob.add("I am alice now", { user_id: "alice", infer: false }));
  seen.bobReads = await outcome(() => bob.get(seen.update.id));
  seen.bobUpdates = await outcome(() => bob.update(seen.update.id, { text: "bob was here" }));
  seen.bobDeletes = await outcome(() => bob.delete(seen.update.id));
  seen.bobDeletesAll = await outcome(() => bob.deleteAll({ user_id: "alice" }));
  seen.bobDeletesTag = await bob.deleteUsers({ agent_id: tag });
  seen.afterBob = await alice.getAll(mine);
  seen.aliceTexts = (await alice.getAll({ user_id: "alice", page: 1, page_size: 200 })).results.map((m) => m.memory);
  // a delete naming nobody (an unset variable: the client leaves it out) deletes nothing
  seen.deleteNobody = await outcome(() => alice.deleteAll({ agent_id: undefined }));
  seen.deprecated = await outcome(() => alice.deleteUser({ entity_type: "agent", entity_id: tag }));
  seen.run = await alice.deleteUsers({ run_id: `${tag}/run` });
  seen.afterRun = await alice.getAll(mine);
  seen.batchDelete = await alice.batchDelete([(await alice.getAll(mine))[0].id]);
  seen.delete = await alice.delete(seen.wrapped.results[0].id);
  await alice.add(`I like quinces ${tag}`, { agent_id: tag, infer: false });
  seen.deleteAll = await alice.deleteAll(mine);
  seen.after = await alice.getAll(mine);
  return seen;
}

run(main);
