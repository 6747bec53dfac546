import { describe, expect, it } from 'vitest';
import { computeNodeStatus, type NodeStatusInput } from '../../src/domain/node-status.js';

const conditions = (entries: Record<string, string>) => Object.entries(entries).map(([type, status]) => ({ type, status }));
const healthy = { MemoryPressure: 'False', DiskPressure: 'False', PIDPressure: 'False', Ready: 'True' };

describe('computeNodeStatus', () => {
  it.each<[string, NodeStatusInput, string]>([
    ['empty object', {}, 'running'],
    ['healthy conditions', { status: { conditions: conditions(healthy) } }, 'running'],
    ['healthy plus NetworkUnavailable False', { status: { conditions: conditions({ ...healthy, NetworkUnavailable: 'False' }) } }, 'running'],
    ['unknown condition types are ignored', { status: { conditions: conditions({ ...healthy, FrequentKubeletRestart: 'True' }) } }, 'running'],
    ['Ready False', { status: { conditions: conditions({ ...healthy, Ready: 'False' }) } }, 'warning'],
    ['Ready Unknown', { status: { conditions: conditions({ ...healthy, Ready: 'Unknown' }) } }, 'warning'],
    ['DiskPressure True', { status: { conditions: conditions({ ...healthy, DiskPressure: 'True' }) } }, 'warning'],
    ['MemoryPressure Unknown', { status: { conditions: conditions({ ...healthy, MemoryPressure: 'Unknown' }) } }, 'warning'],
    ['PIDPressure True', { status: { conditions: conditions({ ...healthy, PIDPressure: 'True' }) } }, 'warning'],
    ['NetworkUnavailable True', { status: { conditions: conditions({ ...healthy, NetworkUnavailable: 'True' }) } }, 'warning'],
    ['ConfigOK False', { status: { conditions: conditions({ ...healthy, ConfigOK: 'False' }) } }, 'warning'],
    ['KubeletReady Unknown', { status: { conditions: conditions({ ...healthy, KubeletReady: 'Unknown' }) } }, 'warning'],
    ['unschedulable wins over warnings', { spec: { unschedulable: true }, status: { conditions: conditions({ Ready: 'False' }) } }, 'unschedulable'],
    ['unschedulable false is ignored', { spec: { unschedulable: false }, status: { conditions: conditions(healthy) } }, 'running'],
    ['null spec and status', { spec: null, status: null }, 'running'],
  ])('%s → %s', (_name, node, expected) => {
    expect(computeNodeStatus(node)).toBe(expected);
  });
});
