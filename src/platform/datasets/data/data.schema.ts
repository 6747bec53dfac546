import { z } from 'zod';

/** One data item of a collection's list, fields in the order the service writes them. */
const dataListItem = z.object({
  _id: z.string(),
  datasetId: z.string(),
  collectionId: z.string(),
  q: z.string(),
  a: z.string(),
  chunkIndex: z.number().int(),
});

/** `core/dataset/data/list` (by page). */
export const dataListResponse = z.object({ pageNum: z.number().int(), pageSize: z.number().int(), data: z.array(dataListItem), total: z.number().int() });

/** `core/dataset/data/v2/list` (by offset). */
export const dataListV2Response = z.object({ list: z.array(dataListItem), total: z.number().int() });
