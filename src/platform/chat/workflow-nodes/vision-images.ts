/**
 * The images an AI chat node sends a vision model (the reference's vision switch on a vision
 * model): the question's, then those of the history's user messages, newest first. Web addresses
 * and data URLs go as they are; this service's own file links (uploads, and images sent inline
 * into a stored chat: chat/inline-images.ts) are read and inlined as data URLs, since the model
 * cannot fetch them. An image that cannot be read is left out.
 */
import { valuesText } from '../../../domain/workflow/chat-values.js';
import type { PromptMessage } from '../../../domain/workflow/prompts.js';
import type { ChatItem, ChatValue } from '../../../domain/workflow/types.js';
import type { LlmMessage } from '../../../infra/llm-stream.js';
import { untilCut } from './call-cut.js';
import { distinctFileLinks, fileExtensionOf } from './file-links.js';
import type { NodeDeps } from './node-deps.js';

/** Images one model call is sent: the first ones, once each per message (the reference sets no count). */
export const MAX_VISION_IMAGES = 20;
/** An inlined image's size cap: what the common providers accept per image. */
export const MAX_VISION_IMAGE_BYTES = 20 * 1024 * 1024;
/**
 * Bytes of own files one model call reads to inline: the question's and the history's images
 * are held in memory together (and sent a third larger as base64).
 */
export const MAX_VISION_INLINED_BYTES = 48 * 1024 * 1024;

export type ImagePart = { type: 'image_url'; image_url: { url: string } };

/** What is left of one model call's images. */
interface VisionBudget {
  images: number;
  bytes: number;
}

/** An image's media type: the one served when it is an image type, else from the file name. */
function imageType(url: string, served?: string): string {
  if (served?.startsWith('image/')) return served.split(';')[0]!;
  const ext = fileExtensionOf(url);
  return ext === 'jpg' || ext === 'jpeg' ? 'image/jpeg' : ext === 'gif' || ext === 'webp' ? `image/${ext}` : 'image/png';
}

/** The image links of chat values, once each. */
function imageLinksOf(values: readonly ChatValue[]): string[] {
  return distinctFileLinks(values.flatMap((value) => (value.type === 'file' && value.file.type === 'image' ? [value.file.url] : [])));
}

/**
 * Links as image parts, within the budget: each link tried takes one of its images. Own files
 * are read one at a time: a question may name any number of links, each of which would
 * otherwise be held in memory at once.
 */
async function partsOf(deps: NodeDeps, urls: readonly string[], budget: VisionBudget): Promise<ImagePart[]> {
  const parts: ImagePart[] = [];
  for (const url of urls) {
    if (budget.images <= 0) break;
    budget.images -= 1;
    if (/^(https?|data):/i.test(url)) parts.push({ type: 'image_url', image_url: { url } });
    else if (budget.bytes > 0) {
      try {
        const file = await untilCut(deps.signal, (signal) => deps.download(url, Math.min(MAX_VISION_IMAGE_BYTES, budget.bytes), signal));
        budget.bytes -= file.buffer.length;
        parts.push({ type: 'image_url', image_url: { url: `data:${imageType(url, file.contentType)};base64,${file.buffer.toString('base64')}` } });
      } catch {
        // Unreadable or too large: left out, as a missing image is (cut by a hang-up too: the model call then is).
      }
    }
  }
  return parts;
}

/**
 * History items as prompt messages, each user message with the image links of its item. A user
 * item holding images only is kept (its text empty), where the text-only history drops it.
 */
export function visionHistoryMessages(items: readonly ChatItem[]): { messages: PromptMessage[]; imageLinks: Map<PromptMessage, string[]> } {
  const messages: PromptMessage[] = [];
  const imageLinks = new Map<PromptMessage, string[]>();
  for (const item of items) {
    const message: PromptMessage = { role: item.obj === 'System' ? 'system' : item.obj === 'AI' ? 'assistant' : 'user', content: valuesText(item.value) };
    const links = message.role === 'user' ? imageLinksOf(item.value) : [];
    if (message.content === '' && links.length === 0) continue;
    if (links.length > 0) imageLinks.set(message, links);
    messages.push(message);
  }
  return { messages, imageLinks };
}

/**
 * The messages a vision call sends: the last (the question) with the question's images, the
 * history's user messages with theirs, images before the text as the reference builds them.
 * The question's images come first in the budget, then the history's from the newest message.
 * A history message left with neither text nor image is not sent. Answers the question's parts too.
 */
export async function withVisionImages(
  deps: NodeDeps,
  trimmed: readonly PromptMessage[],
  query: readonly ChatValue[],
  historyImageLinks: ReadonlyMap<PromptMessage, string[]>,
): Promise<{ sent: LlmMessage[]; questionImages: ImagePart[] }> {
  const budget: VisionBudget = { images: MAX_VISION_IMAGES, bytes: MAX_VISION_INLINED_BYTES };
  const questionImages = await partsOf(deps, imageLinksOf(query), budget);
  const historyImages = new Map<PromptMessage, ImagePart[]>();
  for (const message of [...trimmed].reverse()) {
    const links = historyImageLinks.get(message);
    if (links) historyImages.set(message, await partsOf(deps, links, budget));
  }
  const last = trimmed.length - 1;
  const sent = trimmed.flatMap((message, index): LlmMessage[] => {
    const images = index === last ? questionImages : (historyImages.get(message) ?? []);
    if (images.length === 0) return message.content === '' && index !== last ? [] : [message];
    const text = index === last || message.content !== '' ? [{ type: 'text', text: message.content }] : [];
    return [{ role: 'user', content: [...images, ...text] }];
  });
  return { sent, questionImages };
}
