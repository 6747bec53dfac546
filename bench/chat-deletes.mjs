// Deleting chats when the deployment holds many chat files: BENCH_FILES (default 20,000) files in
// the `chat` GridFS bucket, a tenth of them in the bench team (one per chat of two apps), the rest
// in other teams, written straight into the store as an upload through /api stores them. Times
// delHistory (one chat with a file), clearHistories of an app's 50 chats, and an app delete.
// Usage: npm run build && node bench/chat-deletes.mjs
import { ObjectId } from 'mongodb';
import { rootClient } from './datasets-common.mjs';
import { CHAT_GRAPH } from './fixtures.mjs';
import { startBenchEnvironment } from './lib.mjs';

const FILES = Number(process.env.BENCH_FILES) || 20000;
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'false', CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const { user, call } = await rootClient(env.url);
  const createApp = (name) => call('POST', '/core/app/create', { name, type: 'advanced', modules: CHAT_GRAPH.nodes, edges: CHAT_GRAPH.edges });
  const [kept, cleared, deleted] = [await createApp('kept'), await createApp('cleared'), await createApp('deleted')];
  const teamId = new ObjectId(user.team.teamId), tmbId = new ObjectId(user.team.tmbId);
  const files = env.db.collection('chat.files'), chunks = env.db.collection('chat.chunks');
  const chatsOf = { [kept]: Math.floor(FILES / 10) - 100, [cleared]: 50, [deleted]: 50 };
  /** A chat file as the upload route stores it: the metadata the client sent plus our owner fields. */
  const fileDoc = (team, app, chatId) => ({
    _id: new ObjectId(), length: 5, chunkSize: 261120, uploadDate: new Date(), filename: 'note.txt',
    metadata: { chatId, appId: app.toHexString(), teamId: team.toHexString(), tmbId: tmbId.toHexString(), contentType: 'text/plain' },
    teamId: team, chatId, appId: app,
  });
  for (const [app, n] of Object.entries(chatsOf)) {
    const appId = new ObjectId(app);
    const chats = Array.from({ length: n }, (_, i) => ({ chatId: `c${app}${i}`, teamId, tmbId, appId, title: `chat ${i}`, source: 'online', updateTime: new Date(), createTime: new Date() }));
    await env.db.collection('chats').insertMany(chats);
    const docs = chats.map((c) => fileDoc(teamId, appId, c.chatId));
    await files.insertMany(docs);
    await chunks.insertMany(docs.map((f) => ({ files_id: f._id, n: 0, data: Buffer.from('hello') })));
  }
  for (let s = Math.floor(FILES / 10); s < FILES; s += 1000) {
    const docs = Array.from({ length: Math.min(1000, FILES - s) }, (_, i) => fileDoc(new ObjectId(), new ObjectId(), `c${s + i}`));
    await files.insertMany(docs);
    await chunks.insertMany(docs.map((f) => ({ files_id: f._id, n: 0, data: Buffer.from('hello') })));
  }
  console.log(`seeded ${FILES} chat files (${Math.floor(FILES / 10)} in the bench team)`);
  const timed = async (fn) => {
    const s = performance.now();
    await fn();
    return Math.round(performance.now() - s);
  };
  const single = [];
  for (let i = 0; i < 5; i++) single.push(await timed(() => call('POST', '/core/chat/delHistory', { appId: kept, chatId: `c${kept}${i}` })));
  console.log(JSON.stringify({ route: 'delHistory', 'ms in turn': single.join(' ') }));
  console.log(JSON.stringify({ route: 'clearHistories (50 chats)', ms: await timed(() => call('POST', '/core/chat/clearHistories', { appId: cleared })) }));
  console.log(JSON.stringify({ route: 'app delete (50 chats)', ms: await timed(() => call('DELETE', `/core/app/del?appId=${deleted}`)) }));
  const left = await files.countDocuments({ 'metadata.teamId': teamId.toHexString() });
  const expected = chatsOf[kept] - 5;
  if (left !== expected) throw new Error(`the bench team holds ${left} chat files, expected ${expected}`);
  console.log(JSON.stringify({ 'team files left': left, 'deployment files left': await files.countDocuments({}) }));
} finally {
  await env.stop();
}
