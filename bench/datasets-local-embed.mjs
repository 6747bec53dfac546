// The built-in lexical embedding and the in-memory vector index at dataset scale:
// embeds N synthetic chunks (chunks/s), loads them into a VectorIndex, then times queries
// (embed + top-k search, and search alone) and prints p50/p99. Pure CPU, no database.
//   node bench/datasets-local-embed.mjs            (N = 100000)
//   BENCH_CHUNKS=20000 BENCH_QUERIES=300 node bench/datasets-local-embed.mjs
import { register } from 'tsx/esm/api';

register();
const { lexicalEmbed } = await import('../src/domain/lexical-embedding.ts');
const { VectorIndex } = await import('../src/domain/vector-index.ts');
const { tokenizeForSearch } = await import('../src/domain/full-text.ts');

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const DIMENSIONS = 256;
const TOP_K = 100;

// Deterministic pseudo-random text: a Zipf-like draw over a fixed vocabulary, some Chinese.
let seed = 42;
const random = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const english = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${'aeiou'[i % 5]}${'nrst'[i % 4]}`);
const chinese = '知识库文本向量检索模型训练数据集合文件分块问题答案系统用户团队应用工作流插件接口配置'.split('');
const word = () => english[Math.floor(english.length * random() ** 3)];
const sentence = () => {
  if (random() < 0.2) return `${Array.from({ length: 12 }, () => chinese[Math.floor(random() * chinese.length)]).join('')}。`;
  return `${Array.from({ length: 8 + Math.floor(random() * 8) }, word).join(' ')}.`;
};
const chunk = () => Array.from({ length: 3 + Math.floor(random() * 3) }, sentence).join(' ');

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
const ms = (value) => `${value.toFixed(2)} ms`;

console.log(`chunks ${CHUNKS}, dimensions ${DIMENSIONS}, queries ${QUERIES}, top-k ${TOP_K}`);
const texts = Array.from({ length: CHUNKS }, chunk);
const averageLength = texts.reduce((sum, text) => sum + text.length, 0) / texts.length;

let started = performance.now();
const vectors = texts.map((text) => lexicalEmbed(text, DIMENSIONS));
const embedSeconds = (performance.now() - started) / 1000;
console.log(`lexicalEmbed: ${Math.round(CHUNKS / embedSeconds)} chunks/s (average ${Math.round(averageLength)} chars)`);

started = performance.now();
for (let i = 0; i < CHUNKS; i++) tokenizeForSearch(texts[i]);
console.log(`tokenizeForSearch: ${Math.round(CHUNKS / ((performance.now() - started) / 1000))} chunks/s`);

const index = new VectorIndex(DIMENSIONS);
started = performance.now();
vectors.forEach((vector, i) => {
  index.upsert(`c${i}`, vector);
});
console.log(`VectorIndex.upsert: ${Math.round(CHUNKS / ((performance.now() - started) / 1000))} vectors/s, size ${index.size}`);

const queries = Array.from({ length: QUERIES }, () => Array.from({ length: 6 }, word).join(' '));
for (const query of queries.slice(0, 10)) index.search(lexicalEmbed(query, DIMENSIONS), TOP_K); // warm-up

const run = (label, fn) => {
  const times = [];
  for (const query of queries) {
    const t0 = performance.now();
    fn(query);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(`${label}: p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))}`);
};
const queryVectors = new Map(queries.map((query) => [query, lexicalEmbed(query, DIMENSIONS)]));
run('search only (top 100)', (query) => index.search(queryVectors.get(query), TOP_K));
run('embed + search (top 100)', (query) => index.search(lexicalEmbed(query, DIMENSIONS), TOP_K));
run('embed + search with a 50% filter', (query) => index.search(lexicalEmbed(query, DIMENSIONS), TOP_K, (id) => id.charCodeAt(id.length - 1) % 2 === 0));
