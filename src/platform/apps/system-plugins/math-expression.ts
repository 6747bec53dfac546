/**
 * A small arithmetic evaluator for the mathExprVal plugin: numbers, + - * / % ^ (or **),
 * parentheses, unary signs, the constants pi and e and a fixed set of Math functions. It parses
 * the text itself; nothing is ever passed to eval or Function.
 */
const FUNCTIONS: Record<string, (...args: number[]) => number> = {
  abs: Math.abs,
  sqrt: Math.sqrt,
  cbrt: Math.cbrt,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  log: Math.log10,
  ln: Math.log,
  log2: Math.log2,
  exp: Math.exp,
  floor: Math.floor,
  ceil: Math.ceil,
  round: Math.round,
  trunc: Math.trunc,
  sign: Math.sign,
  min: Math.min,
  max: Math.max,
  pow: Math.pow,
};
const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E };
const MAX_LENGTH = 1000;
const MAX_DEPTH = 64;

export class MathExpressionError extends Error {}

type Token = { kind: 'num'; value: number } | { kind: 'id'; value: string } | { kind: 'op'; value: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?/i.exec(text.slice(i));
    if (num) {
      tokens.push({ kind: 'num', value: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    const id = /^[a-z_][a-z0-9_]*/i.exec(text.slice(i));
    if (id) {
      tokens.push({ kind: 'id', value: id[0].toLowerCase() });
      i += id[0].length;
      continue;
    }
    if (text.startsWith('**', i)) {
      tokens.push({ kind: 'op', value: '^' });
      i += 2;
      continue;
    }
    if ('+-*/%^(),×÷'.includes(c)) {
      tokens.push({ kind: 'op', value: c === '×' ? '*' : c === '÷' ? '/' : c });
      i++;
      continue;
    }
    throw new MathExpressionError(`Unexpected character '${c}' at position ${i + 1}`);
  }
  return tokens;
}

export function evaluateMathExpression(text: string): number {
  if (text.length > MAX_LENGTH) throw new MathExpressionError(`The expression is longer than ${MAX_LENGTH} characters`);
  const tokens = tokenize(text);
  let pos = 0;
  let depth = 0;
  const peek = () => tokens[pos];
  const isOp = (value: string) => {
    const t = peek();
    return t?.kind === 'op' && t.value === value;
  };
  const expect = (value: string) => {
    if (!isOp(value)) throw new MathExpressionError(`Expected '${value}'`);
    pos++;
  };
  const nest = <T>(run: () => T): T => {
    if (++depth > MAX_DEPTH) throw new MathExpressionError('The expression is nested too deeply');
    try {
      return run();
    } finally {
      depth--;
    }
  };

  const expression = (): number =>
    nest(() => {
      let value = term();
      while (isOp('+') || isOp('-')) {
        const op = (tokens[pos++] as Token).value;
        const right = term();
        value = op === '+' ? value + right : value - right;
      }
      return value;
    });
  const term = (): number => {
    let value = unary();
    while (isOp('*') || isOp('/') || isOp('%')) {
      const op = (tokens[pos++] as Token).value;
      const right = unary();
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  };
  const unary = (): number =>
    nest(() => {
      if (isOp('-')) {
        pos++;
        return -unary();
      }
      if (isOp('+')) {
        pos++;
        return unary();
      }
      return power();
    });
  const power = (): number => {
    const base = primary();
    if (isOp('^')) {
      pos++;
      return base ** unary();
    }
    return base;
  };
  const primary = (): number => {
    const t = peek();
    if (!t) throw new MathExpressionError('The expression ended unexpectedly');
    pos++;
    if (t.kind === 'num') return t.value;
    if (t.kind === 'op' && t.value === '(') {
      const value = expression();
      expect(')');
      return value;
    }
    if (t.kind === 'id') {
      if (isOp('(')) {
        // Own keys only: 'constructor' and friends must not reach Object.prototype.
        const fn = Object.hasOwn(FUNCTIONS, t.value) ? FUNCTIONS[t.value] : undefined;
        if (!fn) throw new MathExpressionError(`Unknown function '${t.value}'`);
        pos++;
        const args: number[] = [];
        if (!isOp(')')) {
          args.push(expression());
          while (isOp(',')) {
            pos++;
            args.push(expression());
          }
        }
        expect(')');
        return fn(...args);
      }
      const constant = Object.hasOwn(CONSTANTS, t.value) ? CONSTANTS[t.value] : undefined;
      if (constant === undefined) throw new MathExpressionError(`Unknown name '${t.value}'`);
      return constant;
    }
    throw new MathExpressionError(`Unexpected '${t.value}'`);
  };

  if (tokens.length === 0) throw new MathExpressionError('The expression is empty');
  const result = expression();
  if (pos < tokens.length) throw new MathExpressionError(`Unexpected '${(tokens[pos] as Token).value}'`);
  if (!Number.isFinite(result)) throw new MathExpressionError('The result is not a finite number');
  return result;
}
