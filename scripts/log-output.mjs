// Where `npm run up` sends the server's log lines: readable (pino-pretty) when stdout is a
// terminal, the JSON lines as they are otherwise (a file, a pipe, a log collector).
import pinoPretty from 'pino-pretty';

export const PRETTY_OPTIONS = {
  colorize: true,
  translateTime: 'SYS:HH:MM:ss.l',
  singleLine: true,
  // Same on every line of this process: noise on a terminal.
  ignore: 'pid,hostname,service',
};

/** A writable for the server's stdout chunks (JSON lines, possibly split across chunks). */
export function logOutput(stream = process.stdout) {
  if (!stream.isTTY) return stream;
  return pinoPretty({ ...PRETTY_OPTIONS, colorize: PRETTY_OPTIONS.colorize && stream.hasColors?.() !== false, destination: stream });
}
