/**
 * Kubernetes label-selector syntax (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
 * `a>1`, `a<1`; comma = AND), parsed and evaluated without I/O. The grammar and the matching
 * rules follow apimachinery's `labels.Parse`: a `!=`/`notin` requirement also matches objects
 * that lack the key, and `in ()` means "the value is the empty string". `>`/`<` compare 64-bit
 * integers (`parseInt64`); `compileSelector` parses their bounds once for many objects.
 */
import { textHead } from './text-cut.js';

export type SelectorOperator = 'in' | 'notin' | 'exists' | 'notexists' | 'gt' | 'lt';

export interface Requirement {
  key: string;
  operator: SelectorOperator;
  /** Allowed values (`in`), refused values (`notin`), or the one integer bound (`gt`/`lt`). */
  values: string[];
}

export type ParseResult = { ok: true; requirements: Requirement[] } | { ok: false; error: string };

type TokenKind = 'id' | '!' | '=' | '==' | '!=' | '(' | ')' | ',' | '>' | '<' | 'in' | 'notin' | 'end';
interface Token {
  kind: TokenKind;
  text: string;
}

const SPECIAL = new Set(['!', '=', ',', '(', ')', '<', '>']);
const isSpace = (char: string) => char === ' ' || char === '\t' || char === '\n' || char === '\r';

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < input.length) {
    const char = input[index] as string;
    if (isSpace(char)) {
      index++;
      continue;
    }
    const two = input.slice(index, index + 2);
    if (two === '==' || two === '!=') {
      tokens.push({ kind: two, text: two });
      index += 2;
      continue;
    }
    if (SPECIAL.has(char)) {
      tokens.push({ kind: char as TokenKind, text: char });
      index++;
      continue;
    }
    let end = index;
    while (end < input.length && !isSpace(input[end] as string) && !SPECIAL.has(input[end] as string)) end++;
    const text = input.slice(index, end);
    tokens.push({ kind: text === 'in' ? 'in' : text === 'notin' ? 'notin' : 'id', text });
    index = end;
  }
  tokens.push({ kind: 'end', text: '' });
  return tokens;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Digits of the largest 64-bit integer: what a bound may hold after its leading zeros. */
const INT64_DIGITS = 19;

/**
 * A `>`/`<` bound, or the label value it is compared with, as the reference reads both (Go's
 * `strconv.ParseInt(text, 10, 64)`): a decimal integer within 64 bits, else null (a bound is then
 * an invalid selector, a label value matches nothing). Never parses more than 19 digits.
 */
export function parseInt64(text: string): bigint | null {
  if (!/^-?\d+$/.test(text)) return null;
  const negative = text.charCodeAt(0) === 45;
  let start = negative ? 1 : 0;
  while (start < text.length - 1 && text.charCodeAt(start) === 48) start++;
  if (text.length - start > INT64_DIGITS) return null;
  const value = BigInt(text.slice(start));
  const signed = negative ? -value : value;
  return signed < INT64_MIN || signed > INT64_MAX ? null : signed;
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Returns why a label key is invalid (qualified name: optional DNS prefix + '/' + name), or null. */
export function validateKey(key: string): string | null {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== null && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `invalid label key "${key}": prefix must be a DNS subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    return `invalid label key "${key}": name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric`;
  }
  return null;
}

/** Returns why a label value is invalid (empty, or up to 63 name characters), or null. */
export function validateValue(value: string): string | null {
  if (value === '') return null;
  if (value.length > 63 || !NAME.test(value)) return `invalid label value "${value}"`;
  return null;
}

class Parser {
  private position = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.position] as Token;
  }
  private next(): Token {
    const token = this.peek();
    if (token.kind !== 'end') this.position++;
    return token;
  }

  parse(): Requirement[] {
    const requirements: Requirement[] = [];
    if (this.peek().kind === 'end') return requirements;
    for (;;) {
      requirements.push(this.requirement());
      const token = this.next();
      if (token.kind === 'end') return requirements;
      if (token.kind !== ',') throw new Error(`found '${token.text}', expected ','`);
    }
  }

  private key(): string {
    const token = this.next();
    // Where a key is read, the reference reads `in`/`notin` as identifiers: `in`, `!in`, `notin=x` are valid.
    if (token.kind !== 'id' && token.kind !== 'in' && token.kind !== 'notin') throw new Error(`found '${token.text || 'end of input'}', expected a key`);
    const problem = validateKey(token.text);
    if (problem) throw new Error(problem);
    return token.text;
  }

  private requirement(): Requirement {
    if (this.peek().kind === '!') {
      this.next();
      const key = this.key();
      const after = this.peek().kind;
      if (after !== ',' && after !== 'end') throw new Error(`found '${this.peek().text}', expected ',' or end after '!${key}'`);
      return { key, operator: 'notexists', values: [] };
    }
    const key = this.key();
    const op = this.peek();
    switch (op.kind) {
      case ',':
      case 'end':
        return { key, operator: 'exists', values: [] };
      case '=':
      case '==':
      case '!=':
        this.next();
        return { key, operator: op.kind === '!=' ? 'notin' : 'in', values: [this.singleValue()] };
      case 'in':
      case 'notin':
        this.next();
        return { key, operator: op.kind, values: this.valueList() };
      case '>':
      case '<': {
        this.next();
        const bound = this.next();
        if (bound.kind !== 'id' || parseInt64(bound.text) === null) {
          throw new Error(`'${op.kind}' needs a 64-bit integer value, found '${bound.text.length > 32 ? `${textHead(bound.text, 32)}…` : bound.text}'`);
        }
        // The reference validates the bound as a label value too: a negative one ("-1") is invalid.
        const problem = validateValue(bound.text);
        if (problem) throw new Error(problem);
        return { key, operator: op.kind === '>' ? 'gt' : 'lt', values: [bound.text] };
      }
      default:
        throw new Error(`found '${op.text}', expected an operator after '${key}'`);
    }
  }

  /** The value after `=`/`!=`: an identifier, or nothing (the empty value) before ',' or end. */
  private singleValue(): string {
    const token = this.peek();
    if (token.kind === ',' || token.kind === 'end') return '';
    if (token.kind !== 'id' && token.kind !== 'in' && token.kind !== 'notin') throw new Error(`found '${token.text}', expected a value`);
    this.next();
    const problem = validateValue(token.text);
    if (problem) throw new Error(problem);
    return token.text;
  }

  private valueList(): string[] {
    if (this.next().kind !== '(') throw new Error("expected '(' after in/notin");
    const values: string[] = [];
    for (;;) {
      const token = this.peek();
      if (token.kind === ')' || token.kind === ',') {
        values.push('');
      } else if (token.kind === 'id' || token.kind === 'in' || token.kind === 'notin') {
        this.next();
        const problem = validateValue(token.text);
        if (problem) throw new Error(problem);
        values.push(token.text);
      } else {
        throw new Error(`found '${token.text || 'end of input'}', expected a value or ')'`);
      }
      const separator = this.next();
      if (separator.kind === ')') return [...new Set(values)];
      if (separator.kind !== ',') throw new Error(`found '${separator.text || 'end of input'}', expected ',' or ')'`);
    }
  }
}

export function parseSelector(input: string): ParseResult {
  try {
    return { ok: true, requirements: new Parser(tokenize(input)).parse() };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

export function matchesRequirement(requirement: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, requirement.key);
  const value = has ? (labels[requirement.key] as string) : undefined;
  switch (requirement.operator) {
    case 'exists':
      return has;
    case 'notexists':
      return !has;
    case 'in':
      return has && requirement.values.includes(value as string);
    case 'notin':
      return !has || !requirement.values.includes(value as string);
    case 'gt':
    case 'lt':
      return has && compares(requirement.operator, value as string, parseInt64(requirement.values[0] as string));
  }
}

function compares(operator: 'gt' | 'lt', value: string, bound: bigint | null): boolean {
  if (bound === null) return false;
  const actual = parseInt64(value);
  return actual !== null && (operator === 'gt' ? actual > bound : actual < bound);
}

export function matchesSelector(requirements: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((requirement) => matchesRequirement(requirement, labels));
}

/**
 * The requirements as one test of label sets, for one selector over many objects: each `>`/`<`
 * bound is parsed once here, not once per object.
 */
export function compileSelector(requirements: readonly Requirement[]): (labels: Readonly<Record<string, string>>) => boolean {
  const tests = requirements.map((requirement): ((labels: Readonly<Record<string, string>>) => boolean) => {
    if (requirement.operator !== 'gt' && requirement.operator !== 'lt') return (labels) => matchesRequirement(requirement, labels);
    const { key, operator } = requirement;
    const bound = parseInt64(requirement.values[0] as string);
    return (labels) => Object.hasOwn(labels, key) && compares(operator, labels[key] as string, bound);
  });
  return (labels) => tests.every((test) => test(labels));
}
