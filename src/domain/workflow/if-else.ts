/** Condition evaluation of the ifElse node. */
import { compileUserRegex, parseSlashedRegex, type UserRegex } from '../user-regex.js';

export interface IfElseCondition {
  variable?: unknown;
  condition?: string;
  value?: unknown;
}

export interface IfElseBranch {
  condition?: 'AND' | 'OR';
  list?: IfElseCondition[];
}

/** Empty means null/undefined, a blank string, NaN, [] or {}. */
export function isEmptyValue(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (typeof value === 'string') return value.trim() === '';
  if (typeof value === 'number') return Number.isNaN(value);
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.keys(value).length === 0;
  return false;
}

function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function lengthOf(value: unknown): number {
  if (typeof value === 'string' || Array.isArray(value)) return value.length;
  return 0;
}

/** A `reg` condition's pattern, slashes optional; run on RE2 (linear time, see user-regex). */
function toRegExp(pattern: string): UserRegex | undefined {
  const slashed = parseSlashedRegex(pattern);
  return slashed ? compileUserRegex(slashed.pattern, slashed.flags) : compileUserRegex(pattern.replace(/^\//, '').replace(/\/$/, ''));
}

/** Evaluates one condition against an already resolved variable value. */
export function checkCondition(variableValue: unknown, condition: string | undefined, expected: unknown): boolean {
  const target = asText(expected);
  const n = Number(variableValue);
  const m = Number(target);
  switch (condition) {
    case 'isEmpty':
      return isEmptyValue(variableValue);
    case 'isNotEmpty':
      return !isEmptyValue(variableValue);
    case 'equalTo':
      return asText(variableValue) === target;
    case 'notEqual':
      return asText(variableValue) !== target;
    case 'greaterThan':
      return n > m;
    case 'greaterThanOrEqualTo':
      return n >= m;
    case 'lessThan':
      return n < m;
    case 'lessThanOrEqualTo':
      return n <= m;
    case 'include':
      return Array.isArray(variableValue) ? variableValue.map(asText).includes(target) : asText(variableValue).includes(target);
    case 'notInclude':
      return Array.isArray(variableValue) ? !variableValue.map(asText).includes(target) : !asText(variableValue).includes(target);
    case 'startWith':
      return asText(variableValue).startsWith(target);
    case 'endWith':
      return asText(variableValue).endsWith(target);
    case 'reg':
      return toRegExp(target)?.test(asText(variableValue)) ?? false;
    case 'lengthEqualTo':
      return lengthOf(variableValue) === m;
    case 'lengthNotEqualTo':
      return lengthOf(variableValue) !== m;
    case 'lengthGreaterThan':
      return lengthOf(variableValue) > m;
    case 'lengthGreaterThanOrEqualTo':
      return lengthOf(variableValue) >= m;
    case 'lengthLessThan':
      return lengthOf(variableValue) < m;
    case 'lengthLessThanOrEqualTo':
      return lengthOf(variableValue) <= m;
    default:
      return false;
  }
}

/** Branch names in order: IF, ELSE IF 1, ELSE IF 2, ... */
export function branchName(index: number): string {
  return index === 0 ? 'IF' : `ELSE IF ${index}`;
}

/** Picks the first branch whose conditions hold; `resolve` turns a variable reference into a value. */
export function chooseBranch(branches: readonly IfElseBranch[], resolve: (variable: unknown) => unknown): string {
  for (const [index, branch] of branches.entries()) {
    const list = branch.list ?? [];
    if (list.length === 0) continue;
    const results = list.map((item) => checkCondition(resolve(item.variable), item.condition, item.value));
    const holds = branch.condition === 'OR' ? results.some(Boolean) : results.every(Boolean);
    if (holds) return branchName(index);
  }
  return 'ELSE';
}
