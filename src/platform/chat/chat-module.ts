/** Wires the chat area's repositories and services from the app's shared capabilities. */
import type { FastifyInstance } from 'fastify';
import { OWN_FILE_READ_PATH, OWN_PLUGIN_PATH, ownServicePath } from '../../domain/workflow/own-service-url.js';
import { joinUrl } from '../../infra/join-url.js';
import { safeFetch } from '../../infra/outbound-fetch.js';
import type { SelfCallScope } from '../../infra/self-call-token.js';
import type { AuthContext } from '../auth/types.js';
import type { ChatFileStore, DatasetsAccess } from '../datasets/index.js';
import type { OutLinkService } from '../outlinks/outlinks.service.js';
import { type AppSource, createAppSource } from './app-source.js';
import { type ChatDoc, type ChatRepo, createChatRepo } from './chat.repo.js';
import { type ChatFilesRepo, createChatFilesRepo } from './chat-files.repo.js';
import { type ChatAccess, createChatAccess } from './chat-access.js';
import { createChatLogsRepo } from './chat-logs.repo.js';
import { type ChatLogsService, createChatLogsService } from './chat-logs.service.js';
import { type ChatRunService, createChatRunService } from './chat-run.service.js';
import { type CustomFeedbacks, createCustomFeedbacks } from './custom-feedbacks.js';
import type { InlineImageFiles } from './inline-images.js';
import { createInteractiveSeals } from './interactive-seal.js';
import { createModelAccess, type ModelAccess } from './model-access.js';
import { createSelfCaller, type SelfAnswer } from './self-call.js';
import type { HttpCall, NodeDeps, SharedNodeDeps } from './workflow-nodes/node-deps.js';

/** A file read proves itself by its signed link: the call names no team or chat. */
const NO_RUN_SCOPE: SelfCallScope = { teamId: '', appId: '', chatId: '', dataId: '' };

/** What other modules use of chat (`app.chat`): its services, never its repositories. */
export interface ChatServices {
  apps: AppSource;
  access: ChatAccess;
  run: ChatRunService;
  outLinks: OutLinkService;
  models: ModelAccess;
  memberContext: (tmbId: string) => Promise<Omit<AuthContext, 'authType'> | null>;
  /** Outbound HTTP to user-configured URLs (hooks, channels, the HTTP node). */
  outbound: typeof safeFetch;
  now: () => number;
  /** An app's chat logs (the app log page). */
  logs: ChatLogsService;
  /** Custom feedback a workflow run sends through the customFeedback plugin endpoint. */
  feedback: Pick<CustomFeedbacks, 'append'>;
  /** The chat `chatId` of the app if the caller may continue it (null: none yet); 403 unAuthChat when it is someone else's. */
  findOwnChat(auth: AuthContext, appId: string, chatId: string, within?: { shareId?: string; teamId?: string }): Promise<ChatDoc | null>;
  /** Tests only: the repositories behind these services. */
  testing: { repo: ChatRepo; files: ChatFilesRepo };
}

/** The chat module as its own routes use it: the services with the repositories behind them. */
export interface ChatModule extends Omit<ChatServices, 'testing' | 'feedback'> {
  repo: ChatRepo;
  /** The chat files a chat's delete removes, and their start-up migration. */
  files: ChatFilesRepo;
  feedback: CustomFeedbacks;
  /** Dataset permission checks (the datasets module's rules). */
  datasets: Pick<DatasetsAccess, 'authorize' | 'authorizeData' | 'findInTeam'>;
  /** Where a stored chat's question keeps its inline images (the datasets module's chat files). */
  inlineImages: InlineImageFiles;
  /** New read links for a chat window's own files whose links are (nearly) expired (the datasets module's chat files). */
  fileLinks: Pick<ChatFileStore, 'renewLinks'>;
}

/** The part of the module other modules see. */
export function chatServicesOf(chat: ChatModule): ChatServices {
  const { apps, access, run, outLinks, models, memberContext, outbound, now, logs, feedback, findOwnChat, repo, files } = chat;
  return { apps, access, run, outLinks, models, memberContext, outbound, now, logs, feedback: { append: feedback.append }, findOwnChat, testing: { repo, files } };
}

/** The code node's calls to the operator's sandbox: that one URL, private addresses allowed, no redirects. */
function sandboxRunner(sandboxUrl: string | undefined, outbound: typeof safeFetch): SharedNodeDeps['runSandbox'] {
  if (!sandboxUrl) return undefined;
  const url = joinUrl(sandboxUrl, '/sandbox/js');
  return async (body, signal) => {
    const response = await outbound(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, timeoutMs: 60_000, allowPrivate: true, maxRedirects: 0, signal });
    return { status: response.status, text: response.text() };
  };
}

export function createChatModule(app: FastifyInstance): ChatModule {
  const db = app.mongo.db;
  const now = () => app.identity.clock.now();
  const files = createChatFilesRepo(db);
  const repo = createChatRepo(db, files);
  const apps = createAppSource(app);
  const models = createModelAccess(app);
  const outbound: typeof safeFetch = (url, options = {}) =>
    safeFetch(url, { allowPrivate: app.config.SSRF_ALLOW_PRIVATE, timeoutMs: app.config.OUTBOUND_TIMEOUT_MS, maxBytes: app.config.OUTBOUND_MAX_BYTES, ...options });

  const memberContext = app.identity.memberContext;
  const callSelf = createSelfCaller(app, outbound);

  const outLinks = app.outlinks;
  // The datasets module's own check: judged on its team read model (no read when warm).
  const datasets: ChatModule['datasets'] = app.datasets;
  const access = createChatAccess({ repo, apps, datasets, memberContext });
  const chatFiles = app.datasets.chatFiles;
  const inlineImages: InlineImageFiles = chatFiles;
  // What every run's nodes share, built once: only the per-run fields change between turns.
  const sharedNodeDeps: SharedNodeDeps = {
    resolveLlm: models.resolveLlm,
    searchDatasets: models.searchDatasets(),
    runSandbox: sandboxRunner(app.config.SANDBOX_URL, outbound),
    // The turn's signal cuts the plugin's own calls (fetchUrl's download) once its client hung up.
    runSystemPlugin: (name, inputs, signal) => app.apps.runSystemPlugin(name, inputs, { signal }),
  };
  /**
   * A run's download: this service's file links go to its own file route (files it accepted,
   * UPLOAD_LIMIT_BYTES), any other link is a fetched page (OUTBOUND_MAX_BYTES). A chat file whose
   * link expired is read for the run's own chat only (datasets files/expired-chat-link.ts).
   */
  const downloadFor =
    (run: { teamId: string; appId: string; chatId: string }): NodeDeps['download'] =>
    async (url, maxBytes = Infinity, signal) => {
      const ownFile = ownServicePath(url, OWN_FILE_READ_PATH);
      const cap = ownFile ? app.config.UPLOAD_LIMIT_BYTES : app.config.OUTBOUND_MAX_BYTES;
      const limits = { timeoutMs: 30_000, maxBytes: Math.min(maxBytes, cap), signal };
      const token = ownFile ? new URL(ownFile, 'http://self.invalid').searchParams.get('token') : null;
      if (token) {
        const replayed = await chatFiles.readExpired(token, run, limits.maxBytes);
        if (replayed) return replayed;
      }
      let answer: SelfAnswer;
      if (ownFile) answer = await callSelf(ownFile, { method: 'GET', ...limits }, NO_RUN_SCOPE);
      else {
        const response = await outbound(url, limits);
        answer = { status: response.status, body: response.body, contentType: response.headers['content-type'] };
      }
      if (answer.status >= 400) throw new Error(`HTTP ${answer.status}`);
      return { buffer: answer.body, contentType: answer.contentType };
    };
  /**
   * An HTTP node's call, for the run `scope` names: a relative plugin URL is this service's own
   * route, called with the proof of the run's team and the chat item it saves.
   */
  const httpCall = async (call: HttpCall, scope: SelfCallScope) => {
    const ownPlugin = ownServicePath(call.url, OWN_PLUGIN_PATH);
    if (ownPlugin) {
      const response = await callSelf(ownPlugin, call, scope);
      return { status: response.status, text: response.body.toString('utf8') };
    }
    const response = await outbound(call.url, { method: call.method, headers: call.headers, body: call.body, timeoutMs: call.timeoutMs, signal: call.signal });
    return { status: response.status, text: response.text() };
  };
  const run = createChatRunService({
    repo,
    apps,
    // Turns record their usage through identity's repository (chat-run.service.ts takes the repository).
    usage: app.identity.usage,
    now: () => new Date(now()),
    nodeDeps: (base) =>
      Object.assign({}, base, sharedNodeDeps, {
        download: downloadFor(base),
        httpCall: (call: HttpCall) => httpCall(call, { teamId: base.teamId, appId: base.appId, chatId: base.chatId, dataId: base.responseChatItemId }),
      }),
    logError: (error, message) => {
      app.opsMetrics.databaseError('chat turn', error);
      app.log.error({ err: error }, message);
    },
    chargeCredential: (caller, points) => app.identity.credentials.charge(caller.auth, points),
    supplierGuard: access.supplierGuard,
    storedGraphGuard: access.storedGraphGuard,
    seals: createInteractiveSeals(app.config.TOKEN_KEY, now),
  });
  const feedback = createCustomFeedbacks({ repo, running: run.runningFeedbacks, onFailure: (error) => app.log.warn({ err: error }, 'custom feedback not saved') });
  const logs = createChatLogsService(createChatLogsRepo(db), now);
  return { repo, files, logs, apps, access, run, outLinks, models, datasets, inlineImages, fileLinks: chatFiles, memberContext, outbound, now, feedback, findOwnChat: (auth, appId, chatId, within) => access.findOwnChat(auth, appId, chatId, within) };
}
