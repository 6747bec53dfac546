// The app log page (core/app/getChatLogs) of an app with many chats: BENCH_CHATS (default 5,000)
// chats of two items each in the app and as many in a second app of the team, written straight
// into the store, then two pages timed 4 times in turn.
// Usage: npm run build && node bench/chat-logs.mjs
import { ObjectId } from 'mongodb';
import { rootClient } from './datasets-common.mjs';
import { CHAT_GRAPH } from './fixtures.mjs';
import { startBenchEnvironment } from './lib.mjs';
const N = Number(process.env.BENCH_CHATS) || 5000;
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'false', CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const { user, call } = await rootClient(env.url);
  const appId = await call('POST', '/core/app/create', { name: 'logs', type: 'advanced', modules: CHAT_GRAPH.nodes, edges: CHAT_GRAPH.edges });
  const other = await call('POST', '/core/app/create', { name: 'other', type: 'advanced', modules: CHAT_GRAPH.nodes, edges: CHAT_GRAPH.edges });
  const teamId = new ObjectId(user.team.teamId), tmbId = new ObjectId(user.team.tmbId);
  for (const [app, n] of [[appId, N], [other, N]]) {
    for (let s = 0; s < n; s += 1000) {
      const chats = Array.from({ length: 1000 }, (_, j) => ({ chatId: `c${app}${s + j}`, teamId, tmbId, appId: new ObjectId(app), title: `chat ${s + j}`, source: 'online', updateTime: new Date(Date.now() - (s + j) * 1000), createTime: new Date() }));
      await env.db.collection('chats').insertMany(chats);
      await env.db.collection('chatitems').insertMany(chats.flatMap((c) => [{ chatId: c.chatId, teamId, tmbId, appId: c.appId, obj: 'Human', value: [{ type: 'text', text: { content: 'hello there '.repeat(20) } }], time: new Date(), dataId: new ObjectId().toHexString() }, { chatId: c.chatId, teamId, tmbId, appId: c.appId, obj: 'AI', value: [{ type: 'text', text: { content: 'an answer '.repeat(40) } }], time: new Date(), dataId: new ObjectId().toHexString(), userGoodFeedback: 'yes' }]));
    }
  }
  console.log(`seeded ${N} chats (2 items each) in each of 2 apps`);
  for (const body of [{ appId, pageNum: 1, pageSize: 20 }, { appId, pageNum: 5, pageSize: 20 }]) {
    const times = [];
    for (let r = 0; r < 4; r++) { const s = performance.now(); await call('POST', '/core/app/getChatLogs', body); times.push(Math.round(performance.now() - s)); }
    console.log(JSON.stringify({ route: 'getChatLogs', ...body, appId: undefined, 'ms in turn': times.join(' ') }));
  }
} finally { await env.stop(); }
