import type { CliContext } from './context.js';

/** The platform admin commands (filled in by the platform module). */
export async function runPlatformCommand(args: string[], _context: CliContext): Promise<unknown> {
  throw new Error(`unknown command '${args.join(' ')}'`);
}
