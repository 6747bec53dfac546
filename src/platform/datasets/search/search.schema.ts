import { z } from 'zod';
import { SEARCH_MODES } from './search.service.js';

/** One found item; `score` lists each ranking that placed it (its value and rank there). */
const searchResultItem = z.object({
  id: z.string(),
  q: z.string(),
  a: z.string(),
  chunkIndex: z.number().int(),
  datasetId: z.string(),
  collectionId: z.string(),
  sourceId: z.string().optional(),
  sourceName: z.string(),
  score: z.array(z.object({ type: z.string().describe('embedding, fullText, reRank or rrf'), value: z.number(), index: z.number().int() })),
});

/** `core/dataset/searchTest`, fields in the order the route writes them. */
export const searchTestResponse = z.object({
  list: z.array(searchResultItem),
  searchMode: z.enum(SEARCH_MODES),
  limit: z.number().int(),
  similarity: z.number(),
  usingReRank: z.boolean(),
  usingSimilarityFilter: z.boolean(),
  queryExtensionModel: z.string().optional().describe('the model that rewrote the question, when query extension ran'),
  duration: z.string().describe('seconds, e.g. 0.042s'),
});
