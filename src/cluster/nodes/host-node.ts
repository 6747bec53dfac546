import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { uidForName } from './node-document.js';

/** Kubernetes architecture names for Node's process.arch values. */
const ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };

async function readText(path: string): Promise<string | null> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function osImage(): Promise<string> {
  const release = await readText('/etc/os-release');
  const pretty = release?.match(/^PRETTY_NAME="?([^"\n]*)"?$/m)?.[1];
  return pretty ?? `${os.type()} ${os.release()}`;
}

function addresses(hostname: string): { type: string; address: string }[] {
  const found: { type: string; address: string }[] = [];
  for (const entries of Object.values(os.networkInterfaces())) {
    for (const entry of entries ?? []) {
      if (!entry.internal && !entry.address.startsWith('fe80')) found.push({ type: 'InternalIP', address: entry.address });
    }
  }
  if (found.length === 0) found.push({ type: 'InternalIP', address: '127.0.0.1' });
  return [...found, { type: 'Hostname', address: hostname }];
}

/**
 * The uid of every host-registered node: the unique uid index then takes one host node per
 * database, so of replicas starting together on an empty one only the first insert lands.
 */
export const HOST_NODE_UID = uidForName('platform.io/host-registration');

/** The machine this process runs on (named `machineName`, its hostname), as a Kubernetes Node with real facts. */
export async function describeHostNode(now: Date, machineName: string): Promise<Record<string, unknown>> {
  // Node names are lowercase DNS names; a hostname with other characters is adjusted.
  const hostname = machineName.toLowerCase().replace(/[^a-z0-9.-]/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '') || 'localhost';
  const arch = ARCH[process.arch] ?? process.arch;
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const memoryKi = `${Math.floor(os.totalmem() / 1024)}Ki`;
  const cpus = String(os.availableParallelism());
  const machineID = (await readText('/etc/machine-id')) ?? undefined;
  const bootID = (await readText('/proc/sys/kernel/random/boot_id')) ?? undefined;
  const time = `${now.toISOString().slice(0, 19)}Z`;
  const capacity = { cpu: cpus, memory: memoryKi, pods: '110' };
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    lastHeartbeatTime: time,
    lastTransitionTime: time,
    reason,
    message,
  });
  return {
    metadata: {
      name: hostname,
      uid: HOST_NODE_UID,
      creationTimestamp: time,
      labels: {
        'kubernetes.io/hostname': hostname,
        'kubernetes.io/os': platform,
        'kubernetes.io/arch': arch,
        'beta.kubernetes.io/os': platform,
        'beta.kubernetes.io/arch': arch,
        'node-role.kubernetes.io/control-plane': '',
        'node-role.kubernetes.io/master': '',
      },
      annotations: { 'platform.io/registered-by': 'host-registration' },
    },
    spec: {},
    status: {
      capacity,
      allocatable: capacity,
      conditions: [
        condition('MemoryPressure', 'False', 'HostHasSufficientMemory', 'host has sufficient memory available'),
        condition('DiskPressure', 'False', 'HostHasNoDiskPressure', 'host has no disk pressure'),
        condition('PIDPressure', 'False', 'HostHasSufficientPID', 'host has sufficient PID available'),
        condition('Ready', 'True', 'HostReady', 'the service host is running'),
      ],
      addresses: addresses(hostname),
      nodeInfo: {
        machineID,
        systemUUID: machineID,
        bootID,
        kernelVersion: os.release(),
        osImage: await osImage(),
        operatingSystem: platform,
        architecture: arch,
      },
    },
  };
}
