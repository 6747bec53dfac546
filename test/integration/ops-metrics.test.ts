import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postToken } from '../fixtures/cluster/helpers.js';
import { client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';

/** One sample of the Prometheus text format. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
// Values as Go's ParseFloat reads them (NaN and Inf in any case).
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (-?[0-9.e+-]+|nan|[+-]?inf)$`, 'i');
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/g;

/** Parses the exposition format strictly: every line is a HELP, a TYPE or a sample. */
function parseMetrics(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (new RegExp(`^# HELP ${NAME} .*$`).test(line)) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a Prometheus text line: ${line}`);
    const labels: Record<string, string> = {};
    const labelText = sample[2] ?? '';
    let consumed = 0;
    for (const match of labelText.matchAll(LABEL)) {
      labels[match[1]!] = match[2]!;
      consumed += match[0].length;
    }
    if (consumed !== labelText.length) throw new Error(`bad labels in: ${line}`);
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  return { samples, types };
}

let t: TestApp;

async function scrape(app = t.app, headers: Record<string, string> = {}) {
  const response = await app.inject({ method: 'GET', url: '/metrics', headers });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(response.body);
}

/** The value of the one sample matching name and labels (0 when absent). */
function sampleValue(parsed: { samples: Sample[] }, name: string, labels: Record<string, string>): number {
  const found = parsed.samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  return found.reduce((sum, sample) => sum + sample.value, 0);
}

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'metered', password: 'password-m1' });
});

afterAll(async () => {
  await t?.close();
});

describe('GET /metrics', () => {
  it('answers the Prometheus text format, with process metrics', async () => {
    const parsed = await scrape();
    expect(parsed.types.get('http_request_duration_seconds')).toBe('histogram');
    expect(parsed.types.get('database_errors_total')).toBe('counter');
    expect(parsed.types.get('login_blocks_total')).toBe('counter');
    expect(parsed.types.get('training_queue_items')).toBe('gauge');
    expect(parsed.types.get('training_queue_oldest_age_seconds')).toBe('gauge');
    expect(parsed.samples.some((sample) => sample.name === 'process_cpu_user_seconds_total')).toBe(true);
  });

  it('counts requests by route pattern, method and status, with their latency', async () => {
    const session = await login(t, 'metered', 'password-m1');
    const route = { name: 'http_request_duration_seconds_count', labels: { method: 'GET', route: '/api/core/app/list', status_code: '200' } };
    const refused = { ...route, labels: { ...route.labels, status_code: '401' } };
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await t.app.inject({ method: 'GET', url: `/api/core/app/list?n=${i}`, headers: authHeaders(session) })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/api/core/app/list' })).statusCode).toBe(401);
    // A parameterised route is labelled with its pattern, never the raw URL.
    expect((await t.app.inject({ method: 'GET', url: '/kapis/resources.kubesphere.io/v1alpha3/nodes/node-zz' })).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/no/such/path-123' })).statusCode).toBe(404);
    // Preflights and HEAD probes are not timed.
    expect((await t.app.inject({ method: 'OPTIONS', url: '/api/core/app/list', headers: { origin: 'https://ui.example', 'access-control-request-method': 'POST' } })).statusCode).toBe(204);
    expect((await t.app.inject({ method: 'HEAD', url: '/healthz' })).statusCode).toBe(200);
    const after = await scrape();
    expect(after.samples.some((sample) => sample.labels.method === 'OPTIONS' || sample.labels.method === 'HEAD')).toBe(false);
    expect(sampleValue(after, route.name, route.labels) - sampleValue(before, route.name, route.labels)).toBe(3);
    expect(sampleValue(after, refused.name, refused.labels) - sampleValue(before, refused.name, refused.labels)).toBe(1);
    expect(sampleValue(after, 'http_request_duration_seconds_count', { route: '/kapis/resources.kubesphere.io/v1alpha3/nodes/:name', status_code: '403' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(after, 'http_request_duration_seconds_count', { route: '(unmatched)', status_code: '404' })).toBeGreaterThanOrEqual(1);
    const rawUrls = after.samples.filter((sample) => /node-zz|path-123|\?n=/.test(sample.labels.route ?? ''));
    expect(rawUrls).toEqual([]);
    // Latency buckets exist for the route, and the scrape itself is not counted.
    expect(sampleValue(after, 'http_request_duration_seconds_bucket', { ...route.labels, le: '+Inf' })).toBe(sampleValue(after, route.name, route.labels));
    expect(after.samples.some((sample) => sample.labels.route === '/metrics')).toBe(false);
  });

  it('reports the training queue depth and the age of its oldest item', async () => {
    const api = client(t, await login(t, 'metered', 'password-m1'));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Metered' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'manual', type: 'virtual' }));
    const before = await scrape();
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'first' }, { q: 'second' }, { q: 'third' }] }));
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const after = await scrape();
    expect(sampleValue(after, 'training_queue_items', { state: 'queued' }) - sampleValue(before, 'training_queue_items', { state: 'queued' })).toBe(3);
    expect(sampleValue(after, 'training_queue_items', { state: 'failed' })).toBe(0);
    expect(sampleValue(after, 'training_queue_oldest_age_seconds', {})).toBeGreaterThanOrEqual(1);

    // A scrape within the minute reads the queue's counts and its stopped items, not the queue.
    const commands = await commandsDuring(t.app, scrape);
    expect(commands.filter((command) => command.collection === 'dataset_trainings').map((command) => command.name)).toEqual(['aggregate']);
    expect(commands.map((command) => command.collection)).toContain('dataset_training_counts');
    const again = await scrape();
    expect(sampleValue(again, 'training_queue_items', { state: 'queued' })).toBe(sampleValue(after, 'training_queue_items', { state: 'queued' }));
    expect(sampleValue(again, 'training_queue_oldest_age_seconds', {})).toBeGreaterThanOrEqual(sampleValue(after, 'training_queue_oldest_age_seconds', {}));
  });

  it('counts login blocks of both APIs', async () => {
    const before = await scrape();
    let last = 0;
    for (let i = 0; i < 11; i++) {
      last = (await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username: 'metered', password: `wrong-${i}` } })).statusCode;
    }
    expect(last).toBe(429);
    for (let i = 0; i < 11; i++) {
      last = (await postToken(t.app, { grant_type: 'password', username: 'admin', password: `wrong-${i}`, client_id: 'kubesphere', client_secret: 'kubesphere' })).statusCode;
    }
    expect(last).toBe(429);
    const after = await scrape();
    expect(sampleValue(after, 'login_blocks_total', { api: 'platform' }) - sampleValue(before, 'login_blocks_total', { api: 'platform' })).toBe(1);
    expect(sampleValue(after, 'login_blocks_total', { api: 'cluster' }) - sampleValue(before, 'login_blocks_total', { api: 'cluster' })).toBe(1);
  });
});

describe('METRICS_TOKEN', () => {
  let guarded: TestApp;
  const token = 'metrics-token-0123456789';

  beforeAll(async () => {
    guarded = await buildTestApp({ METRICS_TOKEN: token });
  });

  afterAll(async () => {
    await guarded?.close();
  });

  it('refuses scrapes without the bearer token, without touching the session cookie', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: token }]) {
      const response = await guarded.app.inject({ method: 'GET', url: '/metrics', headers });
      expect(response.statusCode).toBe(401);
      expect(response.headers['set-cookie']).toBeUndefined();
      expect(response.body).not.toContain('http_request_duration_seconds');
    }
    const parsed = await scrape(guarded.app, { authorization: `Bearer ${token}` });
    expect(parsed.types.get('login_blocks_total')).toBe('counter');
  });
});
