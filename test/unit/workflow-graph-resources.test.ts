import { describe, expect, it } from 'vitest';
import { datasetIdsOf, graphResources } from '../../src/domain/workflow/graph-resources.js';

const search = (value: unknown) => ({ nodeId: 's', flowNodeType: 'datasetSearchNode', inputs: [{ key: 'userChatInput', value: 'q' }, { key: 'datasets', value }], outputs: [] });

describe('graphResources', () => {
  it.each([
    ['a literal dataset list', [search([{ datasetId: 'd1' }, { datasetId: 'd2' }])], { datasetIds: ['d1', 'd2'], appIds: [] }],
    ['the same dataset in two nodes once', [search([{ datasetId: 'd1' }]), search([{ datasetId: 'd1' }])], { datasetIds: ['d1'], appIds: [] }],
    ['a reference tuple (checked at run time)', [search(['start', 'datasets'])], { datasetIds: [], appIds: [] }],
    ['plugin and app nodes', [{ flowNodeType: 'pluginModule', pluginId: 'p1' }, { flowNodeType: 'appModule', pluginId: 'a1' }, { flowNodeType: 'chatNode', pluginId: 'x' }], { datasetIds: [], appIds: ['p1', 'a1'] }],
    ['system plugins are no team app', [{ flowNodeType: 'pluginModule', pluginId: 'community-getTime' }], { datasetIds: [], appIds: [] }],
    ['the abandoned runApp node names its app in an input', [{ flowNodeType: 'app', inputs: [{ key: 'app', value: { id: 'r1' } }] }, { flowNodeType: 'app', inputs: [{ key: 'app' }] }], { datasetIds: [], appIds: ['r1'] }],
    ['malformed nodes', [null, 'text', 42, { flowNodeType: 'datasetSearchNode', inputs: 'nope' }, { flowNodeType: 'datasetSearchNode', inputs: [null, { key: 'datasets', value: [null, { datasetId: 7 }] }] }], { datasetIds: [], appIds: [] }],
  ])('%s', (_name, nodes, expected) => {
    expect(graphResources(nodes)).toEqual(expected);
  });

  it('datasetIdsOf reads only {datasetId} entries', () => {
    expect(datasetIdsOf([{ datasetId: 'x', vectorModel: { model: 'm' } }, 'y', { id: 'z' }])).toEqual(['x']);
    expect(datasetIdsOf(undefined)).toEqual([]);
  });
});
