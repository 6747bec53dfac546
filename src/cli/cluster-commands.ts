import { readFile } from 'node:fs/promises';
import { publicAccount } from '../cluster/accounts/accounts.service.js';
import { MovableClock } from '../cluster/clock.js';
import { CLUSTER_INDEXES, createClusterServices } from '../cluster/cluster-services.js';
import { ensureIndexes } from '../infra/mongo.js';
import { type CliContext, parseOptions } from './context.js';
import { importProgressLines } from './progress.js';

const USAGE = `cluster commands:
  cluster user add --username U --email E --password P
  cluster user disable U | cluster user enable U
  cluster user reset-password --username U --password P
  cluster nodes import [--prune] FILE | cluster pods import [--prune] FILE
  cluster nodes delete NAME`;

function required(options: Record<string, string>, name: string): string {
  const value = options[name];
  if (!value) throw new Error(`option --${name} is required\n${USAGE}`);
  return value;
}

function onePositional(positional: string[], what: string): string {
  if (positional.length !== 1) throw new Error(`expected exactly one ${what}\n${USAGE}`);
  return positional[0] as string;
}

async function readInput(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** The cluster admin commands; each returns what the CLI prints as JSON. */
export async function runClusterCommand(args: string[], context: CliContext): Promise<unknown> {
  const [area, action, ...rest] = args;
  // A flag without a value, which parseOptions does not read: only the imports take it.
  const prune = rest.includes('--prune');
  if (prune && action !== 'import') throw new Error(`--prune applies only to imports\n${USAGE}`);
  const { positional, options } = parseOptions(rest.filter((arg) => arg !== '--prune'));
  const services = createClusterServices({ db: context.db, config: context.config, clock: new MovableClock() });
  await ensureIndexes(context.db, CLUSTER_INDEXES);
  const { accounts, nodes } = services;

  switch (`${area} ${action}`) {
    case 'user add': {
      const account = await accounts.create({ username: required(options, 'username'), email: required(options, 'email'), password: required(options, 'password') });
      return publicAccount(account);
    }
    case 'user disable':
      return publicAccount(await accounts.setDisabled(onePositional(positional, 'user name'), true));
    case 'user enable':
      return publicAccount(await accounts.setDisabled(onePositional(positional, 'user name'), false));
    case 'user reset-password':
      return publicAccount(await accounts.resetPassword(required(options, 'username'), required(options, 'password')));
    case 'nodes import':
    case 'pods import': {
      const path = onePositional(positional, 'file');
      const lines = importProgressLines(`cluster ${area} import`, context.progress ?? (() => undefined));
      const text = await readInput(path);
      lines.read(path, Buffer.byteLength(text));
      return area === 'nodes' ? nodes.importNodes(text, lines.progress, { prune }) : nodes.importPods(text, lines.progress, { prune });
    }
    case 'nodes delete':
      return nodes.deleteNode(onePositional(positional, 'node name'));
    default:
      throw new Error(`unknown command 'cluster ${args.join(' ')}'\n${USAGE}`);
  }
}
