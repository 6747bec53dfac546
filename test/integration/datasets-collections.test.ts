import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { findFiltersDuring } from '../helpers/command-counter.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';

let t: TestApp;
let api: Client;
let token: string;
let otherToken: string;
let site: LocalSite;
let siteUrl: string;
let page = '<html><head><title>Guide</title></head><body><nav>menu</nav><main><h1>Install</h1><p>Run the installer and follow the steps.</p></main></body></html>';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

beforeAll(async () => {
  site = await startLocalSite((req, res) => {
    if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2000);
    res.setHeader('content-type', 'text/html');
    res.end(page);
  });
  siteUrl = site.url;
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true', OUTBOUND_TIMEOUT_MS: '500', UPLOAD_LIMIT_BYTES: '100000' });
  await createUser(t, { username: 'col-user', password: 'password-u1' });
  await createUser(t, { username: 'col-other', password: 'password-o1' });
  token = await login(t, 'col-user', 'password-u1');
  otherToken = await login(t, 'col-other', 'password-o1');
  api = client(t, token);
});

afterAll(async () => {
  await t?.close();
  await site?.close();
});

async function upload(file: { name: string; content: Buffer | string; type?: string }, as = token, fields: Record<string, string> = { bucketName: 'dataset' }) {
  const body = multipart(fields, file);
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(as), ...body.headers }, payload: body.payload });
  return { status: response.statusCode, json: response.json() };
}

describe('collections', () => {
  let datasetId: string;
  let folderId: string;
  let textId: string;

  beforeAll(async () => {
    datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Collections' }));
  });

  it('creates folders and text collections, and refuses bad chunk settings', async () => {
    folderId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Folder', type: 'folder' }));
    const text = 'First paragraph about installing.\n\nSecond paragraph about upgrading.';
    const created = await api.ok<{ collectionId: string; results: Record<string, unknown> }>(
      api.post('/core/dataset/collection/create/text', { datasetId, parentId: folderId, name: 'notes', text, chunkSize: 512 }),
    );
    textId = created.collectionId;
    expect(created.results).toEqual({ insertLen: 1, overToken: [], repeat: [], error: [] });
    for (const bad of [{ chunkSize: 0 }, { chunkSize: 1e9 }, { text: '   ' }, { name: '' }]) {
      const response = await api.post('/core/dataset/collection/create/text', { datasetId, name: 'bad', text: 'some text', ...bad });
      expect(response.status, JSON.stringify(bad)).toBe(400);
      expect(response.body.message).toMatch(Object.keys(bad)[0]!);
    }
    const all = await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId, parentId: folderId }));
    expect(all.total).toBe(1);
  });

  it('lists with both pagination shapes and counts', async () => {
    const paged = await api.ok<{ pageNum: number; pageSize: number; total: number; data: { _id: string; trainingAmount: number; dataAmount: number }[] }>(
      api.post('/core/dataset/collection/list', { datasetId, parentId: folderId, pageNum: 1, pageSize: 10 }),
    );
    expect(paged).toMatchObject({ pageNum: 1, pageSize: 10, total: 1 });
    expect(paged.data[0]).toMatchObject({ _id: textId, trainingAmount: 1, dataAmount: 0 });
    await t.app.datasets.trainingWorker.drain();
    const scrolled = await api.ok<{ list: { dataAmount: number; trainingAmount: number }[]; total: number }>(
      api.get('/core/dataset/collection/scrollList', { datasetId, parentId: folderId, current: '1', pageSize: '5' }),
    );
    expect(scrolled.list[0]).toMatchObject({ dataAmount: 1, trainingAmount: 0 });
    // The reference clamps (Math.min(pageSize, 30)); its web client sends 50.
    const clamped = await api.ok<{ pageSize: number }>(api.post('/core/dataset/collection/list', { datasetId, pageSize: 50 }));
    expect(clamped.pageSize).toBe(30);
    const root = await api.ok<{ data: { name: string }[] }>(api.post('/core/dataset/collection/list', { datasetId, selectFolder: true }));
    expect(root.data.map((item) => item.name)).toEqual(['Folder']);
  });

  it('searches by name inside the folder the search is typed in, strips single quotes, and reads null filters as absent', async () => {
    const names = (body: { data?: { name: string }[]; list?: { name: string }[] }) => (body.data ?? body.list ?? []).map((item) => item.name).sort();
    // 'notes' lives in Folder: a search at the root does not find it, a search in Folder does.
    const atRoot = await api.ok<{ data: { name: string }[]; total: number }>(api.post('/core/dataset/collection/list', { datasetId, searchText: 'not' }));
    expect(atRoot.total).toBe(0);
    const inFolder = await api.ok<{ data: { name: string }[] }>(api.post('/core/dataset/collection/list', { datasetId, parentId: folderId, searchText: "n'ot" }));
    expect(names(inFolder)).toEqual(['notes']);
    const scrolled = await api.ok<{ list: { name: string }[] }>(api.get('/core/dataset/collection/scrollList', { datasetId, parentId: folderId, searchText: 'NOTES' }));
    expect(names(scrolled)).toEqual(['notes']);
    const rootScroll = await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId, searchText: 'notes' }));
    expect(rootScroll.total).toBe(0);
    // null filters, as API scripts send them, filter nothing.
    const nulls = await api.ok<{ data: { name: string }[] }>(
      api.post('/core/dataset/collection/list', { datasetId, parentId: null, searchText: null, selectFolder: null, filterTags: null, simple: null }),
    );
    expect(names(nulls)).toEqual(['Folder']);
    const folders = await api.ok<{ data: { name: string }[] }>(api.post('/core/dataset/collection/list', { datasetId, searchText: "'" }));
    expect(names(folders)).toEqual(['Folder']);
  });

  it('gives detail, paths and read links', async () => {
    const detail = await api.ok<Record<string, unknown>>(api.get('/core/dataset/collection/detail', { id: textId }));
    expect(detail).toMatchObject({ _id: textId, name: 'notes', type: 'virtual', sourceName: 'notes', datasetId: { _id: datasetId }, permission: { isOwner: true } });
    expect(await api.ok(api.get('/core/dataset/collection/paths', { parentId: folderId }))).toEqual([{ parentId: folderId, parentName: 'Folder' }]);
    expect(await api.ok(api.get('/core/dataset/collection/read', { collectionId: textId }))).toEqual({ type: 'url', value: '' });
  });

  it('updates (documented PUT and client POST), forbids folders recursively, and deletes with data', async () => {
    await api.ok(api.put('/core/dataset/collection/update', { id: textId, name: 'renamed' }));
    await api.ok(api.post('/core/dataset/collection/update', { id: folderId, forbid: true }));
    const child = await api.ok<{ name: string; forbid: boolean }>(api.get('/core/dataset/collection/detail', { id: textId }));
    expect(child).toMatchObject({ name: 'renamed', forbid: true });
    const intoItself = await api.put('/core/dataset/collection/update', { id: folderId, parentId: folderId });
    expect(intoItself.status).toBe(400);
    await api.ok(api.del('/core/dataset/collection/delete', { id: folderId }));
    expect((await api.get('/core/dataset/collection/detail', { id: textId })).status).toBe(404);
    expect(await t.app.mongo.db.collection('dataset_datas').countDocuments({})).toBe(0);
  });

  it('deletes a folder whose damaged data loops back into itself (the walk ends, nothing is left)', async () => {
    const outer = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Outer', type: 'folder' }));
    const inner = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Inner', type: 'folder', parentId: outer }));
    // No route makes a cycle (moving a folder into its own subtree is refused): only a damaged record does.
    const { ObjectId } = await import('mongodb');
    await t.app.mongo.db.collection('dataset_collections').updateOne({ _id: new ObjectId(outer) }, { $set: { parentId: new ObjectId(inner) } });
    await api.ok(api.del('/core/dataset/collection/delete', { id: outer }));
    for (const id of [outer, inner]) expect((await api.get('/core/dataset/collection/detail', { id })).status).toBe(404);
  });

  it('walks a subtree folder by folder: no $in for a narrow tree, one for a wide level; every descendant goes, nothing else', async () => {
    const { ObjectId } = await import('mongodb');
    const create = (name: string, type: 'folder' | 'virtual', parentId?: string) => api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name, type, ...(parentId ? { parentId } : {}) }));
    const bystander = await create('Bystander', 'virtual');
    const top = await create('Top', 'folder');
    const middle = await create('Middle', 'folder', top);
    const leaves = [await create('Leaf 1', 'virtual', top), await create('Leaf 2', 'virtual', middle)];
    const wide = await create('Wide', 'folder');
    const subfolders = await Promise.all(Array.from({ length: 17 }, (_, i) => create(`Sub ${i}`, 'folder', wide)));
    const deepest = await Promise.all(subfolders.map((sub, i) => create(`In sub ${i}`, 'virtual', sub)));
    let finds: Record<string, unknown>[] = [];
    const watching = async (run: () => Promise<unknown>) => {
      finds = await findFiltersDuring(t.app, 'dataset_collections', run);
    };
    const hasIn = () => finds.some((filter) => Object.values(filter).some((value) => typeof value === 'object' && value !== null && '$in' in value));
    const gone = async (ids: string[]) => (await t.app.mongo.db.collection('dataset_collections').countDocuments({ _id: { $in: ids.map((id) => new ObjectId(id)) } })) === 0;

    // A leaf is not asked for children; a narrow tree is read one folder at a time.
    await watching(() => api.ok(api.put('/core/dataset/collection/update', { id: leaves[0], parentId: middle })));
    expect(finds.some((filter) => 'parentId' in filter)).toBe(false);
    await watching(() => api.ok(api.del('/core/dataset/collection/delete', { id: top })));
    expect(hasIn()).toBe(false);
    expect(await gone([top, middle, ...leaves])).toBe(true);

    // A level of 17 folders is read with one $in.
    await watching(() => api.ok(api.del('/core/dataset/collection/delete', { id: wide })));
    expect(hasIn()).toBe(true);
    expect(await gone([wide, ...subfolders, ...deepest])).toBe(true);
    expect(await gone([bystander])).toBe(false);
    await api.ok(api.del('/core/dataset/collection/delete', { id: bystander }));
  });

  it('imports a web page with a selector, refuses dead links, and syncs', async () => {
    const created = await api.ok<{ collectionId: string; results: { insertLen: number } }>(
      api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/guide`, metadata: { webPageSelector: 'main' } }),
    );
    expect(created.results.insertLen).toBe(1);
    const detail = await api.ok<{ name: string; rawLink: string }>(api.get('/core/dataset/collection/detail', { id: created.collectionId }));
    expect(detail).toMatchObject({ name: `${siteUrl}/guide`, rawLink: `${siteUrl}/guide` });
    expect(await api.ok(api.get('/core/dataset/collection/read', { collectionId: created.collectionId }))).toEqual({ type: 'url', value: `${siteUrl}/guide` });
    await t.app.datasets.trainingWorker.drain();
    const data = await api.ok<{ data: { q: string }[] }>(api.post('/core/dataset/data/list', { collectionId: created.collectionId }));
    expect(data.data[0]?.q).toContain('Run the installer');
    expect(data.data[0]?.q).not.toContain('menu');

    // A selector that is not text is a 400 naming it; a stored one that is not text is ignored by sync.
    const badSelector = await api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/guide`, metadata: { webPageSelector: 1 } });
    expect([badSelector.status, badSelector.body.message]).toEqual([400, expect.stringContaining('webPageSelector')]);
    const auto = await api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/guide`, trainingType: 'auto' });
    expect([auto.status, auto.body.message]).toEqual([400, expect.stringContaining('trainingType')]);
    const slow = await api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/slow` });
    expect(slow.status).toBe(400);
    expect(slow.body.message).toContain('link');
    const count = (await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId }))).total;
    expect(count).toBe(1);

    expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: created.collectionId }))).toBe('sameRaw');
    const oddDataset = await api.ok<string>(api.post('/core/dataset/create', { name: 'Odd selectors' }));
    const oddSelector = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId: oddDataset, name: 'odd', type: 'link', rawLink: `${siteUrl}/guide`, metadata: { webPageSelector: 7 } }));
    expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: oddSelector }))).toBe('success');
    page = page.replace('follow the steps', 'reboot afterwards');
    // Made by another member of the team: the replacement stays theirs.
    const creator = new ObjectId();
    await t.app.mongo.db.collection('dataset_collections').updateOne({ _id: new ObjectId(created.collectionId) }, { $set: { tmbId: creator } });
    expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: created.collectionId }))).toBe('success');
    expect((await api.get('/core/dataset/collection/detail', { id: created.collectionId })).status).toBe(404);
    const after = await api.ok<{ list: { _id: string; rawLink: string }[] }>(api.get('/core/dataset/collection/scrollList', { datasetId }));
    expect(after.list).toHaveLength(1);
    expect(after.list[0]?.rawLink).toBe(`${siteUrl}/guide`);
    const replacement = await t.app.mongo.db.collection('dataset_collections').findOne({ _id: new ObjectId(after.list[0]!._id) });
    expect(String(replacement?.tmbId)).toBe(String(creator));
  });

  it('a sync that finds its replacement already made (an earlier sync whose old collection stayed) only removes the old one', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Half synced' }));
    const kept = page;
    try {
      page = '<html><body><main><p>Version one of the page.</p></main></body></html>';
      const old = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/half` }));
      page = '<html><body><main><p>Version two of the page.</p></main></body></html>';
      // What a sync leaves when its delete of the old collection fails: the new one beside the old.
      const replacement = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/half` }));
      expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: old.collectionId }))).toBe('success');
      const listed = await api.ok<{ list: { _id: string }[] }>(api.get('/core/dataset/collection/scrollList', { datasetId }));
      expect(listed.list.map((item) => item._id)).toEqual([replacement.collectionId]);
    } finally {
      page = kept;
    }
  });

  it('two syncs of one link collection at once import one replacement', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Synced twice' }));
    const kept = page;
    try {
      page = '<html><body><main><p>Version one of the twice synced page.</p></main></body></html>';
      const old = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/twice` }));
      await t.app.datasets.trainingWorker.drain();
      page = `<html><body><main>${Array.from({ length: 40 }, (_, i) => `<p>Version two, paragraph ${i} of the twice synced page, long enough to make several chunks.</p>`).join('')}</main></body></html>`;
      const sync = () => api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: old.collectionId }));
      expect(await Promise.all([sync(), sync()])).toEqual(['success', 'success']);
      const listed = await api.ok<{ list: { _id: string }[] }>(api.get('/core/dataset/collection/scrollList', { datasetId }));
      expect(listed.list).toHaveLength(1);
      // Every queued chunk is the replacement's, once.
      const trainings = t.app.mongo.db.collection('dataset_trainings');
      const chunks = await trainings.countDocuments({ collectionId: new ObjectId(listed.list[0]!._id) });
      expect(chunks).toBeGreaterThan(1);
      expect(await trainings.countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(chunks);
    } finally {
      page = kept;
    }
  });

  it('a link sync refused by the dataset size keeps the collection and does not use up the sync interval', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Sized links' }));
    const kept = page;
    page = '<html><body><main><p>First version of the page.</p></main></body></html>';
    const created = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/sized` }));
    await t.app.datasets.trainingWorker.drain();
    const { teamId } = await api.ok<{ team: { teamId: string } }>(api.get('/support/user/account/tokenLogin')).then((me) => me.team);
    const used = await t.app.teamLimits.usedDatasetSize(teamId);
    await t.app.teamLimits.setPlan(teamId, { maxDatasetSize: used, webSyncIntervalMinutes: 60 });
    // No sync yet in this interval (the test above synced with no interval set).
    await t.app.mongo.db.collection('teams').updateOne({ _id: new ObjectId(teamId) }, { $unset: { 'limit.lastWebsiteSyncTime': '' } });
    page = '<html><body><main><p>Second version of the page, longer.</p></main></body></html>';
    const refused = await api.post('/core/dataset/collection/sync/link', { collectionId: created.collectionId });
    expect(refused.body.statusText, JSON.stringify(refused.body)).toBe('datasetSizeNotEnough');
    expect((await api.get('/core/dataset/collection/detail', { id: created.collectionId })).status).toBe(200);
    // Room made: the next sync goes through at once (the refused one did not start the interval).
    await t.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 100, webSyncIntervalMinutes: 60 });
    expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: created.collectionId }))).toBe('success');
    await t.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000, webSyncIntervalMinutes: 0 });
    page = kept;
  });

  it('uploads files, reads them back by signed link, and builds file and CSV collections', async () => {
    const md = await upload({ name: encodeURIComponent('guide é.md'), content: '# Title\n\nSome markdown body text.', type: 'text/markdown' });
    expect(md.status).toBe(200);
    const { fileId, previewUrl } = md.json.data as { fileId: string; previewUrl: string };
    const read = await t.app.inject({ method: 'GET', url: previewUrl });
    expect(read.statusCode).toBe(200);
    expect(read.body).toBe('# Title\n\nSome markdown body text.');
    const forged = await t.app.inject({ method: 'GET', url: `/api/common/file/read?token=${previewUrl.split('token=')[1]}x` });
    expect(forged.statusCode).toBe(403);

    const preview = await api.ok<{ previewContent: string; totalLength: number }>(api.post('/common/file/previewContent', { type: 'fileLocal', sourceId: fileId }));
    expect(preview.previewContent).toContain('Some markdown body text');
    const chunks = await api.ok<{ q: string; a: string }[]>(api.post('/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: fileId, chunkSize: 512, overlapRatio: 0.2 }));
    expect(chunks[0]?.q).toContain('Some markdown body text');
    const stranger = client(t, otherToken);
    const refused = await stranger.post('/common/file/previewContent', { type: 'fileLocal', sourceId: fileId });
    expect(refused.status).toBe(403);
    expect(refused.body.statusText).toBe('unAuthFile');

    expect(await api.ok(api.post('/core/dataset/collection/create/fileId', { datasetId, fileId }))).toMatchObject({ results: { insertLen: 1 } });
    const strangerDataset = await stranger.ok<string>(stranger.post('/core/dataset/create', { name: 'theirs' }));
    const crossTeam = await stranger.post('/core/dataset/collection/create/fileId', { datasetId: strangerDataset, fileId });
    expect(crossTeam.status).toBe(403);

    const fileCollection = (await api.ok<{ list: { _id: string; name: string }[] }>(api.get('/core/dataset/collection/scrollList', { datasetId }))).list.find((c) => c.name === 'guide é.md');
    expect(fileCollection).toBeDefined();
    const link = await api.ok<{ type: string; value: string }>(api.get('/core/dataset/collection/read', { collectionId: fileCollection!._id }));
    expect((await t.app.inject({ method: 'GET', url: link.value })).body).toContain('Some markdown body text');

    const csv = await upload({ name: 'qa.csv', content: 'index,content\nWhat is A?,A is first\n"Multi, comma",second answer\n', type: 'text/csv' });
    const csvId = (csv.json.data as { fileId: string }).fileId;
    const table = await api.ok<{ collectionId: string; results: { insertLen: number } }>(api.post('/core/dataset/collection/create/csvTable', { datasetId, fileId: csvId }));
    expect(table.results.insertLen).toBe(2);
    const oneColumn = await upload({ name: 'one.csv', content: 'only\nsingle\ncolumn\n', type: 'text/csv' });
    const refusedCsv = await api.post('/core/dataset/collection/create/csvTable', { datasetId, fileId: (oneColumn.json.data as { fileId: string }).fileId });
    expect(refusedCsv.status).toBe(400);
    expect(refusedCsv.body.message).toContain('two columns');

    // A CSV saved by Excel on Chinese Windows is GBK: decoded as every other text file is, for the Q/A import and its preview.
    const gbk = await upload({ name: 'gbk.csv', content: Buffer.from('cecacce22cb4f0b0b80accecc6f82cc7e7c0ca0a', 'hex'), type: 'text/csv' });
    const gbkId = (gbk.json.data as { fileId: string }).fileId;
    const qaPreview = await api.ok<{ q: string; a: string }[]>(api.post('/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: gbkId, isQAImport: true, chunkSize: 512, overlapRatio: 0 }));
    expect(qaPreview).toEqual([expect.objectContaining({ q: '问题', a: '答案' }), expect.objectContaining({ q: '天气', a: '晴朗' })]);
    const gbkTable = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/csvTable', { datasetId, fileId: gbkId }));
    await t.app.datasets.trainingWorker.drain();
    const rows = await api.ok<{ data: { q: string; a: string }[] }>(api.post('/core/dataset/data/list', { collectionId: gbkTable.collectionId }));
    expect(rows.data.map((row) => [row.q, row.a])).toContainEqual(['天气', '晴朗']);
  });

  it('collection/create keeps the source a client records (file, link, external file, text length and hash, createTime)', async () => {
    const uploaded = await upload({ name: 'manual.txt', content: 'The manual text.', type: 'text/plain' });
    const { fileId } = uploaded.json.data as { fileId: string };
    const create = (body: Record<string, unknown>) => api.post('/core/dataset/collection/create', { datasetId, ...body });
    const fileCollection = await api.ok<string>(create({ name: 'manual', type: 'file', fileId, rawTextLength: 16, hashRawText: 'abc123', createTime: '2024-01-02T03:04:05.000Z' }));
    const detail = await api.ok<Record<string, unknown>>(api.get('/core/dataset/collection/detail', { id: fileCollection }));
    expect(detail).toMatchObject({ fileId, sourceId: fileId, rawTextLength: 16, hashRawText: 'abc123', createTime: '2024-01-02T03:04:05.000Z' });
    const readFile = await api.ok<{ value: string }>(api.post('/core/dataset/collection/read', { collectionId: fileCollection }));
    expect((await t.app.inject({ method: 'GET', url: readFile.value })).body).toBe('The manual text.');

    const linkCollection = await api.ok<string>(create({ name: 'guide', type: 'link', rawLink: `${siteUrl}/guide` }));
    expect(await api.ok(api.post('/core/dataset/collection/read', { collectionId: linkCollection }))).toMatchObject({ value: `${siteUrl}/guide` });

    const externalDataset = await api.ok<string>(api.post('/core/dataset/create', { name: 'External', type: 'externalFile' }));
    await api.ok(api.post('/core/dataset/update', { id: externalDataset, externalReadUrl: 'https://files.example.com/read?id={{fileId}}' }));
    const external = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId: externalDataset, name: 'doc', type: 'externalFile', externalFileId: 'doc-7', externalFileUrl: 'https://files.example.com/doc-7.pdf' }));
    expect(await api.ok(api.post('/core/dataset/collection/read', { collectionId: external }))).toMatchObject({ value: 'https://files.example.com/read?id=doc-7' });
    expect(await api.ok(api.get('/core/dataset/collection/detail', { id: external }))).toMatchObject({ sourceId: 'doc-7' });

    // Another team's file, an unknown file and a link that is not http(s) are refused; nothing is created.
    const before = await t.app.mongo.db.collection('dataset_collections').countDocuments({ datasetId: new ObjectId(datasetId) });
    const strangersFile = ((await upload({ name: 'theirs.txt', content: 'Not yours.', type: 'text/plain' }, otherToken)).json.data as { fileId: string }).fileId;
    const foreign = await create({ name: 'stolen', type: 'file', fileId: strangersFile });
    expect([foreign.status, foreign.body.statusText]).toEqual([403, 'unAuthFile']);
    expect((await create({ name: 'ghost', type: 'file', fileId: new ObjectId().toHexString() })).status).toBe(404);
    const badLink = await create({ name: 'bad', type: 'link', rawLink: 'javascript:alert(1)' });
    expect(badLink.status).toBe(400);
    expect(badLink.body.message).toMatch(/rawLink/);
    // http(s) in form but no address a fetch could ever reach: refused at once, not stored to fail later.
    for (const [field, body] of [
      ['rawLink', { type: 'link', rawLink: 'http://exa[mple/guide' }],
      ['rawLink', { type: 'link', rawLink: 'https://example.com:99999/guide' }],
      ['externalFileUrl', { type: 'externalFile', externalFileUrl: 'http://exa mple' }],
      ['externalFileUrl', { type: 'externalFile', externalFileUrl: 'https://[::1' }],
    ] as const) {
      const refused = await create({ name: 'unreachable', ...body });
      expect([refused.status, refused.body.message]).toEqual([400, expect.stringContaining(field)]);
    }
    expect(await t.app.mongo.db.collection('dataset_collections').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(before);
  });

  it('refuses empty, binary and oversized files', async () => {
    expect((await upload({ name: 'empty.txt', content: '' })).status).toBe(400);
    expect((await upload({ name: 'big.txt', content: 'x'.repeat(150_000) })).status).toBe(413);
    expect((await upload({ name: 'doc.txt', content: 'ok' }, token, { bucketName: 'nope' })).status).toBe(400);
    const binary = await upload({ name: 'image.txt', content: Buffer.concat([PNG, Buffer.alloc(64)]) });
    expect(binary.status).toBe(200);
    const before = (await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId }))).total;
    const response = await api.post('/core/dataset/collection/create/fileId', { datasetId, fileId: (binary.json.data as { fileId: string }).fileId });
    expect(response.status).toBe(400);
    expect((await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId }))).total).toBe(before);
  });

  it('creates a collection from a local file upload', async () => {
    const body = multipart({ data: JSON.stringify({ datasetId, chunkSize: 300 }) }, { name: 'local.txt', content: 'Local file content for the dataset.', type: 'text/plain' });
    const response = await t.app.inject({ method: 'POST', url: '/api/core/dataset/collection/create/localFile', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data.results.insertLen).toBe(1);
    const bad = multipart({ data: JSON.stringify({ datasetId, chunkSize: 0 }) }, { name: 'local.txt', content: 'x' });
    const refused = await t.app.inject({ method: 'POST', url: '/api/core/dataset/collection/create/localFile', headers: { ...authHeaders(token), ...bad.headers }, payload: bad.payload });
    expect(refused.statusCode).toBe(400);
  });

  it('a local file upload keeps the file metadata and the collection metadata the request gives, and refuses bad keys before storing anything', async () => {
    const send = (data: Record<string, unknown>, extra: Record<string, string> = {}) => {
      const body = multipart({ data: JSON.stringify({ datasetId, ...data }), ...extra }, { name: 'meta.txt', content: 'Metadata carrying file content.', type: 'text/plain' });
      return t.app.inject({ method: 'POST', url: '/api/core/dataset/collection/create/localFile', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
    };
    const created = await send({ metadata: { kept: 'yes', source: 'form' }, collectionMetadata: { source: 'import job 7' }, fileMetadata: { uploader: 'batch' } });
    expect(created.statusCode, created.body).toBe(200);
    const collection = await api.ok<{ metadata: Record<string, unknown>; fileId: string }>(api.get('/core/dataset/collection/detail', { id: created.json().data.collectionId }));
    expect(collection.metadata).toMatchObject({ kept: 'yes', source: 'import job 7' });
    const file = await t.app.mongo.db.collection('dataset.files').findOne({ _id: new ObjectId(collection.fileId) });
    expect(file?.metadata).toMatchObject({ uploader: 'batch' });

    const filesBefore = await t.app.mongo.db.collection('dataset.files').countDocuments({});
    const badKey = await send({ collectionMetadata: { 'a.b': 1 } });
    expect(badKey.statusCode).toBe(400);
    expect(badKey.json().message).toMatch(/collectionMetadata/);
    expect((await send({ fileMetadata: { $where: 1 } })).statusCode).toBe(400);
    expect((await send({}, { bucketName: 'chat' })).statusCode).toBe(400);
    expect(await t.app.mongo.db.collection('dataset.files').countDocuments({})).toBe(filesBefore);
  });

  it('stores images and serves them publicly', async () => {
    const url = await api.ok<string>(api.post('/common/file/uploadImage', { base64Img: `data:image/png;base64,${PNG.toString('base64')}`, type: 'datasetAvatar' }));
    expect(url).toMatch(/^\/api\/system\/img\/[0-9a-f]{24}\.png$/);
    const image = await t.app.inject({ method: 'GET', url });
    expect(image.statusCode).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.rawPayload.equals(PNG)).toBe(true);
    expect((await t.app.inject({ method: 'GET', url: '/api/system/img/0123456789abcdef01234567.png' })).statusCode).toBe(404);
    expect((await api.post('/common/file/uploadImage', { base64Img: 'data:text/plain;base64,aGVsbG8=' })).status).toBe(400);
  });

  it('fetches URLs for the import preview', async () => {
    const pages = await api.ok<{ url: string; title: string; content: string }[]>(api.post('/common/tools/urlFetch', { urlList: [`${siteUrl}/a`, 'not a url'], selector: 'main' }));
    expect(pages[0]).toMatchObject({ url: `${siteUrl}/a`, title: 'Guide' });
    expect(pages[0]?.content).toContain('Run the installer');
    expect(pages[1]).toEqual({ url: 'not a url', title: '', content: '', selector: '' });
    expect((await api.post('/common/tools/urlFetch', { urlList: [] })).status).toBe(400);
  });
});
