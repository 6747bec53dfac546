import { expect } from 'vitest';
import type { FakeOpenAi, SeenRequest } from './fake-openai.js';

/**
 * Model calls of the fake provider asking the questions `hold` picks answer only when released;
 * the others answer at once. Each call is known by its question (`ask <link>-<i>` in the
 * prompt); the most calls of one link in flight together is kept (a held call counts until
 * released). `releaseAll` lets every held call go and takes the route down.
 */
export function holdModelCalls(fake: FakeOpenAi, hold: (question: string) => boolean = () => true) {
  const asked: string[] = [];
  const held: { question: string; release: () => void }[] = [];
  const inFlight = new Map<string, number>();
  const mostInFlight = new Map<string, number>();
  fake.route('POST', '/v1/chat/completions', async (request: SeenRequest) => {
    const question = /ask (\w+-\d+)/.exec(JSON.stringify(request.body))?.[1] ?? '?';
    const link = question.split('-')[0] as string;
    asked.push(question);
    inFlight.set(link, (inFlight.get(link) ?? 0) + 1);
    mostInFlight.set(link, Math.max(mostInFlight.get(link) ?? 0, inFlight.get(link) ?? 0));
    if (hold(question)) await new Promise<void>((resolve) => held.push({ question, release: resolve }));
    inFlight.set(link, (inFlight.get(link) ?? 1) - 1);
    return { json: { choices: [{ message: { role: 'assistant', content: `answer to ${question}` } }], usage: { prompt_tokens: 1, completion_tokens: 1 } } };
  });
  return {
    asked,
    held,
    askedCount: (question: string) => asked.filter((q) => q === question).length,
    mostInFlight: (link: string) => mostInFlight.get(link) ?? 0,
    /** Releases the held call of this question. */
    release(question: string) {
      const index = held.findIndex((call) => call.question === question);
      expect(index, `a held call asking ${question}`).toBeGreaterThanOrEqual(0);
      held.splice(index, 1)[0]?.release();
    },
    releaseAll: () => {
      for (const call of held.splice(0)) call.release();
      fake.unroute('POST', '/v1/chat/completions');
    },
  };
}
