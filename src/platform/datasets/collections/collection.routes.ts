import type { FastifyInstance, HTTPMethods } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import { pageSkipLimit } from '../../../infra/zod.js';
import { definePlatformRoute, parseWith } from '../../define-route.js';
import type { DatasetsContext } from '../context.js';
import type { FileService } from '../files/file.service.js';
import { jsonField, readMultipart } from '../files/multipart.js';
import { checkUploadMetadata } from '../files/upload-metadata.js';
import { createCollectionImportService } from './collection-import.service.js';
import {
  collectionIdSchema,
  createCollectionSchema,
  createCsvSchema,
  createFileIdSchema,
  createLinkSchema,
  createTextSchema,
  idSchema,
  listCollectionsSchema,
  localFileDataSchema,
  pathsSchema,
  scrollCollectionsSchema,
  updateCollectionSchema,
} from './collection.schema.js';
import { createCollectionService } from './collection.service.js';

const tags = ['Dataset collections'];
const USER = ['session', 'apiKey'] as const;
const POSTS: HTTPMethods[] = ['POST', 'GET'];
const GETS: HTTPMethods[] = ['GET', 'POST'];

export function registerCollectionRoutes(app: FastifyInstance, ctx: DatasetsContext, files: FileService): void {
  const importer = createCollectionImportService(ctx);
  const service = createCollectionService(ctx, importer);
  const base = { auth: USER, tags };
  const url = (path: string) => `/core/dataset/collection${path}`;

  definePlatformRoute(app, { ...base, methods: POSTS, url: url('/create'), input: createCollectionSchema, summary: 'Create an empty (virtual) collection or a folder; returns its id', handler: ({ input, auth }) => service.create(auth, input) });
  definePlatformRoute(app, { ...base, methods: POSTS, url: url('/create/text'), input: createTextSchema, summary: 'Create a collection from text', handler: ({ input, auth }) => importer.fromText(auth, input) });
  definePlatformRoute(app, { ...base, methods: POSTS, url: url('/create/link'), input: createLinkSchema, summary: 'Create a collection from a web page (SSRF-guarded; optional metadata.webPageSelector)', handler: ({ input, auth }) => importer.fromLink(auth, input) });
  definePlatformRoute(app, { ...base, methods: POSTS, url: url('/create/fileId'), input: createFileIdSchema, summary: 'Create a collection from an uploaded file', handler: ({ input, auth }) => importer.fromFileId(auth, input) });
  definePlatformRoute(app, { ...base, methods: POSTS, url: url('/create/csvTable'), input: createCsvSchema, summary: 'Create a Q/A collection from an uploaded CSV (column 1 = q, column 2 = a)', handler: ({ input, auth }) => importer.fromCsv(auth, input) });
  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/dataset/collection/create/localFile',
    auth: USER,
    tags,
    summary: 'Upload a file (multipart: file + data JSON) and create a collection from it',
    handler: async ({ auth, request }) => {
      const { file, fields } = await readMultipart(request, ctx.config.UPLOAD_LIMIT_BYTES);
      if (!file) throw Errors.missingParams("Missing multipart field 'file'");
      const data = jsonField(fields, 'data');
      // A collection reads its source from the dataset bucket: the only one named here.
      if (fields.bucketName !== undefined && fields.bucketName !== 'dataset') throw Errors.missingParams("Invalid field 'bucketName': a collection's file goes to the 'dataset' bucket");
      const { fileMetadata, collectionMetadata, ...input } = parseWith(localFileDataSchema, data);
      const stored = checkUploadMetadata(fileMetadata ?? {}, 'fileMetadata');
      const metadata = collectionMetadata ? { ...input.metadata, ...checkUploadMetadata(collectionMetadata, 'collectionMetadata') } : input.metadata;
      await ctx.auth.authDataset(auth, input.datasetId, 'write');
      const { fileId } = await files.store(auth, 'dataset', file, stored);
      try {
        return await importer.fromFileId(auth, { ...input, metadata, fileId });
      } catch (error) {
        await ctx.repos.files.deleteMany('dataset', auth.teamId, [fileId]);
        throw error;
      }
    },
  });
  definePlatformRoute(app, {
    ...base,
    methods: POSTS,
    url: url('/list'),
    input: listCollectionsSchema,
    summary: 'Paged collection list ({pageNum, pageSize, data, total})',
    handler: async ({ input, auth }) => {
      const { pageNum, pageSize, filterTags, ...filter } = input;
      const { list, total } = await service.listItems(
        auth,
        { ...filter, parentId: filter.parentId ?? null, tags: filterTags ? { ids: filterTags, mode: 'in' } : undefined },
        filter.simple ? undefined : pageSkipLimit(pageNum, pageSize),
      );
      return { pageNum, pageSize, data: list, total };
    },
  });
  definePlatformRoute(app, {
    ...base,
    methods: GETS,
    url: url('/scrollList'),
    input: scrollCollectionsSchema,
    summary: 'Scrolling collection list ({list, total})',
    handler: ({ input, auth }) => {
      const { current, pageSize, filterTags, ...filter } = input;
      return service.listItems(
        auth,
        { ...filter, parentId: filter.parentId ?? null, tags: filterTags ? { ids: filterTags, mode: 'all' } : undefined },
        pageSkipLimit(current, pageSize),
      );
    },
  });
  definePlatformRoute(app, { ...base, methods: GETS, url: url('/detail'), input: idSchema, summary: 'Collection detail with its dataset, source and file', handler: ({ input, auth }) => service.detail(auth, input.id) });
  definePlatformRoute(app, { ...base, methods: GETS, url: url('/paths'), input: pathsSchema, summary: 'Breadcrumb of collection folders', handler: ({ input, auth }) => service.paths(auth, input.parentId) });
  definePlatformRoute(app, { ...base, methods: GETS, url: url('/read'), input: collectionIdSchema, summary: 'Where to read the source ({type: "url", value})', handler: ({ input, auth }) => service.read(auth, input.collectionId) });
  definePlatformRoute(app, { ...base, methods: ['GET', 'POST', 'PUT'], url: url('/update'), input: updateCollectionSchema, summary: 'Rename, move, tag or forbid a collection', handler: ({ input, auth }) => service.update(auth, input) });
  definePlatformRoute(app, { ...base, methods: ['GET', 'DELETE', 'POST'], url: url('/delete'), input: idSchema, summary: 'Delete a collection, its sub-collections and all their data', handler: ({ input, auth }) => service.remove(auth, input.id) });
  definePlatformRoute(app, { ...base, methods: GETS, url: url('/sync/link'), input: collectionIdSchema, summary: 'Re-fetch a link collection ("sameRaw" when unchanged, else "success")', handler: ({ input, auth }) => service.syncLink(auth, input.collectionId) });
}
