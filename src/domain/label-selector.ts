/**
 * Kubernetes label-selector syntax (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
 * `a>1`, `a<1`; comma = AND), parsed and evaluated without I/O. The grammar and the matching
 * rules follow apimachinery's `labels.Parse`: a `!=`/`notin` requirement also matches objects
 * that lack the key, and `in ()` means "the value is the empty string".
 */
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
    if (token.kind !== 'id') throw new Error(`found '${token.text || 'end of input'}', expected a key`);
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
        if (bound.kind !== 'id' || !/^-?\d+$/.test(bound.text)) throw new Error(`'${op.kind}' needs an integer value, found '${bound.text}'`);
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
    case 'lt': {
      if (!has || !/^-?\d+$/.test(value as string)) return false;
      const actual = BigInt(value as string);
      const bound = BigInt(requirement.values[0] as string);
      return requirement.operator === 'gt' ? actual > bound : actual < bound;
    }
  }
}

export function matchesSelector(requirements: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((requirement) => matchesRequirement(requirement, labels));
}
