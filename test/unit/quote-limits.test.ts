import { describe, expect, it } from 'vitest';
import { clampDatasetSearchLimits } from '../../src/domain/workflow/quote-limits.js';

const budgets: Record<string, number> = { small: 2000, mid: 8000, large: 50000 };
const quoteMaxTokenOf = (model: unknown) => budgets[String(model)] ?? budgets.mid;
const search = (limit: unknown) => ({ nodeId: 's', flowNodeType: 'datasetSearchNode', inputs: [{ key: 'datasets', value: [] }, { key: 'limit', value: limit }] });
const chat = (type: string, model?: string) => ({ nodeId: type, flowNodeType: type, inputs: model === undefined ? [] : [{ key: 'model', value: model }] });
const limitOf = (nodes: { flowNodeType: string; inputs: { key: string; value: unknown }[] }[]) =>
  nodes.find((node) => node.flowNodeType === 'datasetSearchNode')?.inputs.find((input) => input.key === 'limit')?.value;

describe('clampDatasetSearchLimits', () => {
  it("lowers a search limit to the largest quote budget of the graph's chat and tools models", () => {
    expect(limitOf(clampDatasetSearchLimits([search(20000), chat('chatNode', 'mid')], quoteMaxTokenOf))).toBe(8000);
    expect(limitOf(clampDatasetSearchLimits([search(20000), chat('chatNode', 'mid'), chat('tools', 'large')], quoteMaxTokenOf))).toBe(20000);
    expect(limitOf(clampDatasetSearchLimits([search(60000), chat('chatNode', 'small'), chat('tools', 'large')], quoteMaxTokenOf))).toBe(50000);
  });

  it('never lowers below 3000, and counts a node without a model as the default model', () => {
    expect(limitOf(clampDatasetSearchLimits([search(5000), chat('chatNode', 'small')], quoteMaxTokenOf))).toBe(3000);
    expect(limitOf(clampDatasetSearchLimits([search(5000)], quoteMaxTokenOf))).toBe(3000);
    expect(limitOf(clampDatasetSearchLimits([search(20000), chat('chatNode')], quoteMaxTokenOf))).toBe(8000);
    expect(limitOf(clampDatasetSearchLimits([search(5000), chat('chatNode', 'x')], () => undefined))).toBe(3000);
  });

  it('leaves limits within the budget, other nodes and the given nodes untouched', () => {
    const nodes = [search(1500), chat('chatNode', 'mid'), { nodeId: 'other', flowNodeType: 'answerNode', inputs: [{ key: 'limit', value: 99999 }] }];
    const out = clampDatasetSearchLimits(nodes, quoteMaxTokenOf);
    expect(out).toEqual(nodes);
    expect(out[0]).toBe(nodes[0]);
    const big = [search(90000), chat('chatNode', 'mid')];
    const clamped = clampDatasetSearchLimits(big, quoteMaxTokenOf);
    expect(limitOf(big)).toBe(90000);
    expect(clamped[1]).toBe(big[1]);
  });

  it('copes with nodes without inputs and non-numeric limits', () => {
    const odd = [{ flowNodeType: 'datasetSearchNode' }, search('lots'), chat('chatNode', 'mid')];
    expect(clampDatasetSearchLimits(odd, quoteMaxTokenOf)).toEqual(odd);
  });
});
