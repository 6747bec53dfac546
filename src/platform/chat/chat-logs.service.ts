/** An app's chat logs (the app log page): which window is shown when the request names none. */
import { pageSkipLimit } from '../../infra/zod.js';
import type { ChatLogsRepo } from './chat-logs.repo.js';
import { DAY_MS } from './chat-time.js';

/** Without a start, the logs page shows the week before its end (the reference's default). */
const DEFAULT_WINDOW_MS = 7 * DAY_MS;

export interface ChatLogsQuery {
  teamId: string;
  appId: string;
  pageNum: number;
  pageSize: number;
  dateStart?: Date;
  dateEnd?: Date;
}

export function createChatLogsService(repo: ChatLogsRepo, now: () => number) {
  return {
    /** One page of the app's chats, newest first, with their feedback counts; the caller has authorised the app. */
    async page(query: ChatLogsQuery) {
      const to = query.dateEnd ?? new Date(now());
      const from = query.dateStart ?? new Date(to.getTime() - DEFAULT_WINDOW_MS);
      return repo.page({ teamId: query.teamId, appId: query.appId, from, to, ...pageSkipLimit(query.pageNum, query.pageSize) });
    },
  };
}

export type ChatLogsService = ReturnType<typeof createChatLogsService>;
