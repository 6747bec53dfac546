import type { Db } from 'mongodb';
import type { Config } from '../config.js';

export interface CliContext {
  config: Config;
  db: Db;
  /** Where long commands report progress (a line each; stderr in the CLI). Silent when unset. */
  progress?: (line: string) => void;
}

/** Reads `--name value` options; a flag given without a value is an error. */
export function parseOptions(args: string[]): { positional: string[]; options: Record<string, string> } {
  const positional: string[] = [];
  const options: Record<string, string> = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg.startsWith('--')) {
      const value = args[index + 1];
      if (value === undefined || value.startsWith('--')) throw new Error(`option ${arg} needs a value`);
      options[arg.slice(2)] = value;
      index++;
    } else {
      positional.push(arg);
    }
  }
  return { positional, options };
}
