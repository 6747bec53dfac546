import { type Db, ObjectId } from 'mongodb';
import { isObjectIdHex } from '../../../infra/mongo.js';

/** Appends a custom feedback text to a chat item (the chat module owns `chatitems`). */
export function createCustomFeedbackRepo(db: Db) {
  return {
    async push(input: { appId: string; chatId: string; dataId: string; text: string }): Promise<boolean> {
      const appIds: (string | ObjectId)[] = isObjectIdHex(input.appId) ? [input.appId, new ObjectId(input.appId)] : [input.appId];
      const result = await db
        .collection('chatitems')
        .updateOne({ chatId: input.chatId, dataId: input.dataId, appId: { $in: appIds } }, { $push: { customFeedbacks: input.text } as never });
      return result.matchedCount === 1;
    },
  };
}
