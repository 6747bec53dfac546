/** Input guides (suggestions shown while typing): who may read or change an app's, and the texts. */
import { Errors } from '../../infra/errors.js';
import { escapeRegex } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import type { AppSource } from './app-source.js';
import type { ChatRepo } from './chat.repo.js';

interface InputGuideDeps {
  guides: ChatRepo['guides'];
  apps: Pick<AppSource, 'authorize' | 'findInTeam' | 'confirmWrite'>;
}

export function createInputGuideService({ guides, apps }: InputGuideDeps) {
  return {
    async count(auth: AuthContext, appId: string | undefined): Promise<{ total: number }> {
      if (!appId) return { total: 0 };
      await apps.authorize(auth, appId, 'read');
      return { total: await guides.count(appId) };
    },

    async list(auth: AuthContext, appId: string, searchKey: string | undefined, page: { skip: number; limit: number }) {
      await apps.authorize(auth, appId, 'read');
      // The reference used the search key unescaped; we escape it.
      const regex = searchKey ? new RegExp(escapeRegex(searchKey), 'i') : undefined;
      return guides.list(appId, regex, page.skip, page.limit);
    },

    /** Up to 6 texts matching what the user types. */
    async query(auth: AuthContext, appId: string, searchKey: string): Promise<string[]> {
      if (auth.authType === 'outLink' && auth.appId !== appId) throw Errors.unAuthApp('This share link belongs to another app');
      // A member chats in the web client only with apps they may read; a share link or team
      // space is itself the grant for its app.
      if (auth.authType === 'token') await apps.authorize(auth, appId, 'read');
      else await apps.findInTeam(auth.teamId, appId);
      return guides.query(appId, new RegExp(escapeRegex(searchKey), 'i'), searchKey, 6);
    },

    /** Returns how many texts were new (duplicates are skipped). */
    async create(auth: AuthContext, appId: string, texts: string[]): Promise<number> {
      await apps.authorize(auth, appId, 'write');
      const inserted = await guides.insertMany(appId, texts);
      await apps.confirmWrite(auth.teamId, appId);
      return inserted;
    },

    async update(auth: AuthContext, appId: string, dataId: string, text: string): Promise<void> {
      await apps.authorize(auth, appId, 'write');
      const result = await guides.update(appId, dataId, text);
      if (result === 'missing') throw Errors.notFound(`Input guide ${dataId} not found in this app`);
      if (result === 'duplicate') throw Errors.conflict(`The input guide text '${text}' already exists`);
    },

    async delete(auth: AuthContext, appId: string, dataIds: string[]): Promise<void> {
      await apps.authorize(auth, appId, 'write');
      await guides.deleteMany(appId, dataIds);
    },

    async deleteAll(auth: AuthContext, appId: string): Promise<void> {
      await apps.authorize(auth, appId, 'write');
      await guides.deleteAll(appId);
    },
  };
}
