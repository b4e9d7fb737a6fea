// mem0's JavaScript client (npm mem0ai, unchanged) against a live server: every memory call as
// its users write them. Run by tests/clients/test_mem0_js_live.py; prints what it saw as JSON.
//
//   node drive.js <base url> <alice's key> <bob's key> <service key> <tag>
const { outcome, run } = require("./common");
const { MemoryClient } = require("mem0ai");

async function main([base, aliceKey, bobKey, serviceKey, tag]) {
  const alice = new MemoryClient({ apiKey: aliceKey, host: base });
  const slashed = new MemoryClient({ apiKey: aliceKey, host: `${base}/api/mem0/` });
  const bob = new MemoryClient({ apiKey: bobKey, host: base });
  const svc = new MemoryClient({ apiKey: serviceKey, host: base });
  const pinged = (client) => outcome(async () => (await client.ping(), "ok"));
  const forged = new MemoryClient({ apiKey: "not-a-key", host: base });
  const seen = { ping: await pinged(alice), slashedPing: await pinged(slashed), forgedPing: await pinged(forged) };
  const filters = { AND: [{ user_id: "alice" }, { agent_id: tag }] };
  seen.added = await alice.add([{ role: "user", content: `I drink oolong tea every morning ${tag}` }], {
    userId: "alice", agentId: tag, metadata: { topic: "drinks" }, infer: false,
  });
  seen.second = await slashed.add(`My sister lives in Lisbon ${tag}`, { agentId: tag, infer: false });
  seen.third = await svc.add(`I cycle to work ${tag}`, { userId: "alice", agentId: tag, runId: `${tag}/run`, infer: false });
  const first = seen.added.results[0].id;
  seen.get = await alice.get(first);
  seen.getAll = await alice.getAll({ filters });
  seen.firstPage = await alice.getAll({ filters, page: 1, pageSize: 2 });
  seen.search = await alice.search("oolong tea", { filters, topK: 5, source: "OPENCLAW" });
  seen.metadataSearch = await alice.search("tea", { filters: { AND: [{ user_id: "alice" }, { metadata: { topic: "drinks" } }] } });
  seen.update = await alice.update(first, { text: `I drink green tea every morning ${tag}` });
  seen.history = await alice.history(seen.update.id);
  seen.users = await alice.users();
  seen.usersPage = await alice.users({ page: 1, pageSize: 1 });
  const page = (await alice.getAll({ filters })).results.map((m) => m.id);
  seen.batchUpdate = await alice.batchUpdate([{ memoryId: page[0], text: `Updated in a batch ${tag}` }]);
  // bob's key: alice is no one it may name, her ids are not its to read or change
  seen.beforeBob = await alice.getAll({ filters });
  seen.bobNamesAlice = await outcome(() => bob.getAll({ filters: { user_id: "alice" } }));
  seen.bobSearchesAlice = await outcome(() => bob.search("tea", { filters: { user_id: "alice" } }));
  seen.bobAddsForAlice = await outcome(() => bob.add("I am alice now", { userId: "alice", infer: false }));
  seen.bobReads = await outcome(() => bob.get(seen.update.id));
  seen.bobDeletes = await outcome(() => bob.delete(seen.update.id));
  seen.bobDeletesAll = await outcome(() => bob.deleteAll({ userId: "alice" }));
  seen.bobDeletesTag = await bob.deleteUsers({ agentId: tag });
  seen.afterBob = await alice.getAll({ filters });
  seen.aliceTexts = (await alice.getAll({ pageSize: 200 })).results.map((m) => m.memory);
  seen.unsupported = await outcome(() => alice.search("tea", { filters, categories: ["x"] }));
  seen.run = await alice.deleteUsers({ runId: `${tag}/run` });
  seen.afterRun = await alice.getAll({ filters });
  seen.batchDelete = await alice.batchDelete([(await alice.getAll({ filters })).results[0].id]);
  seen.delete = await alice.delete(seen.second.results[0].id);
  await alice.add(`I like figs ${tag}`, { agentId: tag, infer: false });
  seen.deleteAll = await alice.deleteAll({ userId: "alice", agentId: tag });
  seen.after = await alice.getAll({ filters });
  return seen;
}

run(main);
