import type { CliContext } from './context.js';

/** The cluster admin commands (filled in by the cluster module). */
export async function runClusterCommand(args: string[], _context: CliContext): Promise<unknown> {
  throw new Error(`unknown command '${args.join(' ')}'`);
}
