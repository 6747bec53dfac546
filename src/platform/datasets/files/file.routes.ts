import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Errors } from '../../../infra/errors.js';
import { safeParseNullAsAbsent } from '../../../infra/null-as-absent.js';
import { abortOnClose } from '../../../infra/request-abort.js';
import { zBoolLike, zDate, zNumberLike, zObjectId } from '../../../infra/zod.js';
import type { AuthContext } from '../../auth/types.js';
import { authenticateCaller, definePlatformRoute } from '../../define-route.js';
import { assertTeamPermission } from '../../permissions/resource-permission.service.js';
import { zChunkSize } from '../collections/collection.schema.js';
import type { DatasetsContext } from '../context.js';
import { BUCKET_NAMES } from './file.repo.js';
import type { FileService } from './file.service.js';
import { jsonField, readMultipart } from './multipart.js';
import { checkUploadMetadata } from './upload-metadata.js';

const tags = ['Files'];
const USER = ['session', 'apiKey'] as const;
/**
 * Who may upload chat files and images: share-page and team-space chat users first (the
 * reference's authChatCert), then members. Their credentials may be fields of the multipart body,
 * so these routes authenticate once it is read.
 */
const UPLOADERS = ['outLink', 'teamSpace', 'session', 'apiKey'] as const;

/** The uploader, from headers, query, JSON body or the multipart body's text fields. */
async function uploaderOf(app: FastifyInstance, request: FastifyRequest, fields?: Record<string, string>): Promise<AuthContext> {
  if (fields) request.body = fields;
  return authenticateCaller(app, request, UPLOADERS);
}

const zSourceType = z.enum(['fileLocal', 'link', 'externalFile']);

const previewSchema = z.object({
  type: zSourceType.default('fileLocal'),
  sourceId: z.string().trim().min(1, 'must not be empty').max(2000),
  isQAImport: zBoolLike.optional(),
  selector: z.string().max(500).optional(),
});

const chunkPreviewSchema = previewSchema.extend({
  chunkSize: zChunkSize.default(512),
  overlapRatio: zNumberLike.pipe(z.number().min(0).max(0.9)).default(0.2),
  customSplitChar: z.string().max(100).optional(),
});

const imageSchema = z.object({
  base64Img: z.string().min(1),
  type: z.string().max(50).default('chatImage'),
  expiredTime: zDate.optional(),
  metadata: z.object({ relatedId: z.string().max(100).optional() }).loose().optional(),
});

/** Files, images, previews and the URL tool (under /api/common, /api/system and the dataset preview). */
export function registerFileRoutes(app: FastifyInstance, ctx: DatasetsContext, service: FileService): void {
  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/common/file/upload',
    auth: [],
    credentialsInBody: UPLOADERS,
    tags,
    summary: 'Upload a file (multipart: file, bucketName, metadata JSON; a session or API key, or a share page\'s shareId + outLinkUid or a team space\'s teamId + teamToken as fields, chat bucket only); returns {fileId, previewUrl}',
    handler: async ({ request }) => {
      const { file, fields } = await readMultipart(request, ctx.config.UPLOAD_LIMIT_BYTES);
      const auth = await uploaderOf(app, request, fields);
      if (!fields.bucketName) throw Errors.missingParams("Missing field 'bucketName'");
      const bucket = z.enum(BUCKET_NAMES).safeParse(fields.bucketName);
      if (!bucket.success) throw Errors.missingParams(`Invalid field 'bucketName': must be one of ${BUCKET_NAMES.join(', ')}`);
      if (!file) throw Errors.missingParams("Missing multipart field 'file'");
      // An empty metadata field counts as none here (an empty JSON field elsewhere is refused).
      const metadata = fields.metadata ? jsonField(fields, 'metadata') : {};
      return service.store(auth, bucket.data, file, checkUploadMetadata(metadata));
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/common/file/uploadImage',
    auth: [],
    credentialsInBody: UPLOADERS,
    tags,
    summary: 'Store an image (JSON base64Img data URI, or multipart file; a session or API key, or share-page or team-space credentials as fields); returns its /api/system/img URL',
    handler: async ({ request }) => {
      if (request.isMultipart()) {
        const { file, fields } = await readMultipart(request, ctx.config.UPLOAD_LIMIT_BYTES);
        const auth = await uploaderOf(app, request, fields);
        if (!file) throw Errors.missingParams("Missing multipart field 'file'");
        const type = fields.type ?? 'chatImage';
        if (type.length > 50) throw Errors.missingParams("Invalid field 'type': must be at most 50 characters");
        return service.uploadImage(auth, { file, type });
      }
      const auth = await uploaderOf(app, request);
      const body = safeParseNullAsAbsent(imageSchema, request.body ?? {});
      if (!body.success) throw body.error;
      return service.uploadImage(auth, { ...body.data, relatedId: body.data.metadata?.relatedId });
    },
  });

  definePlatformRoute(app, {
    methods: ['GET'],
    url: '/system/img/:id',
    auth: [],
    raw: true,
    head: true,
    input: z.object({ id: z.string().min(1).max(100) }),
    tags,
    summary: 'Image bytes (public)',
    handler: async ({ input, reply }) => {
      const image = await service.image(input.id);
      return reply
        .header('content-type', image.contentType)
        .header('content-disposition', image.disposition)
        .header('x-content-type-options', 'nosniff')
        .send(image.binary);
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/common/file/read',
    auth: [],
    raw: true,
    head: true,
    input: z.object({ token: z.string().min(1).max(4000), filename: z.string().optional() }),
    tags,
    summary: 'Stream a file by its signed, expiring read token',
    handler: async ({ input, reply }) => {
      const { served, stream } = await service.open(input.token);
      return reply
        .header('content-type', served.contentType)
        .header('cache-control', 'public, max-age=31536000')
        .header('content-disposition', served.disposition)
        .header('x-content-type-options', 'nosniff')
        .send(stream);
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/common/file/previewContent',
    auth: USER,
    input: previewSchema,
    tags,
    summary: 'First 3000 characters of a file or page ({previewContent, totalLength})',
    handler: ({ input, auth }) => service.previewContent(auth, input),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/dataset/file/getPreviewChunks',
    auth: USER,
    input: chunkPreviewSchema,
    tags,
    summary: 'The first 5 chunks a file or page would be split into',
    handler: ({ input, auth }) => service.previewChunks(auth, input),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/common/tools/urlFetch',
    auth: USER,
    input: z.object({ urlList: z.array(z.string().max(2000)).min(1, 'urlList is empty').max(20), selector: z.string().max(500).optional() }),
    tags,
    summary: 'Fetch web pages as Markdown (SSRF-guarded); failures give empty entries',
    handler: ({ input, auth, request, reply }) => service.urlFetch(auth, input.urlList, input.selector, abortOnClose(request, reply).signal),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/common/system/unlockTask',
    auth: USER,
    input: z.object({ datasetId: zObjectId.optional() }),
    tags,
    summary: "Make the team's locked or failed training items claimable again (team write)",
    handler: async ({ auth }) => {
      assertTeamPermission(auth, 'write');
      const unlocked = await ctx.repos.trainings.unlockTeam(auth.teamId);
      ctx.wakeWorker();
      return { unlocked };
    },
  });
}
