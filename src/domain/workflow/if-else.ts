/** Condition evaluation of the ifElse node. */
import { compileUserRegex, parseSlashedRegex, type UserRegex, UserRegexBudget, UserRegexTooCostlyError } from '../user-regex.js';
import { isRecord } from './input-shapes.js';
import { NodeInputError } from './workflow-error.js';

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

/**
 * A value as the reference compares it: String() (an unset value is "undefined", a list its
 * items joined by commas), except a plain object, which is compared as its JSON.
 */
function asText(value: unknown): string {
  return isRecord(value) ? JSON.stringify(value) : String(value);
}

/** Text and lists have a length; other values none, so every length test but "not equal" fails. */
function lengthOf(value: unknown): number | undefined {
  return typeof value === 'string' || Array.isArray(value) ? value.length : undefined;
}

/** Whether a list holds the text among its items (as text), or a text contains it; other values never. */
function includes(value: unknown, target: string): boolean {
  if (Array.isArray(value)) return value.some((item) => String(item) === target);
  return typeof value === 'string' && value.includes(target);
}

/** A `reg` condition's pattern, slashes optional; run on RE2 (linear time, paid from `budget`, see user-regex). */
function toRegExp(pattern: string, budget: UserRegexBudget): UserRegex | undefined {
  const slashed = parseSlashedRegex(pattern);
  return slashed ? compileUserRegex(slashed.pattern, slashed.flags, budget) : compileUserRegex(pattern.replace(/^\//, '').replace(/\/$/, ''), '', budget);
}

/**
 * Evaluates one condition against an already resolved variable value, with the reference's
 * coercions. A `reg` condition pays its regex work from `budget`: one it cannot pay for throws
 * UserRegexTooCostlyError.
 */
export function checkCondition(variableValue: unknown, condition: string | undefined, expected: unknown, budget = new UserRegexBudget()): boolean {
  const target = expected === undefined || expected === null ? '' : asText(expected);
  const n = Number(variableValue);
  const m = Number(target);
  const length = lengthOf(variableValue);
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
      return includes(variableValue, target);
    case 'notInclude':
      return !includes(variableValue, target);
    // The reference calls the text's own method (a non-text value fails its run); here it is false.
    case 'startWith':
      return typeof variableValue === 'string' && variableValue.startsWith(target);
    case 'endWith':
      return typeof variableValue === 'string' && variableValue.endsWith(target);
    case 'reg':
      return typeof variableValue === 'string' && target !== '' && (toRegExp(target, budget)?.test(variableValue) ?? false);
    case 'lengthEqualTo':
      return length === m;
    case 'lengthNotEqualTo':
      return length !== m;
    case 'lengthGreaterThan':
      return length !== undefined && length > m;
    case 'lengthGreaterThanOrEqualTo':
      return length !== undefined && length >= m;
    case 'lengthLessThan':
      return length !== undefined && length < m;
    case 'lengthLessThanOrEqualTo':
      return length !== undefined && length <= m;
    default:
      return false;
  }
}

/** Branch names in order: IF, ELSE IF 1, ELSE IF 2, ... */
export function branchName(index: number): string {
  return index === 0 ? 'IF' : `ELSE IF ${index}`;
}

/**
 * Picks the first branch whose conditions hold; `resolve` turns a variable reference into a value.
 * A branch without conditions holds when joined by AND and not by OR (every / some of nothing).
 * The `reg` conditions of one call share one regex budget (user-regex.ts): a condition it cannot
 * pay for fails the node with a NodeInputError naming the branch and the condition (the
 * dispatcher names the node). Conditions are checked until the branch's answer is known (they
 * have no effects, so the answer is the same).
 */
export function chooseBranch(branches: readonly IfElseBranch[], resolve: (variable: unknown) => unknown): string {
  const budget = new UserRegexBudget();
  for (const [index, branch] of branches.entries()) {
    // A branch stored without a list of conditions (or not an object) is never taken.
    if (!isRecord(branch) || (branch.list !== undefined && !Array.isArray(branch.list))) continue;
    const list = (branch.list ?? []) as unknown[];
    const holds = (item: unknown, position: number) => {
      if (!isRecord(item)) return false;
      try {
        return checkCondition(resolve(item.variable), item.condition as string | undefined, item.value, budget);
      } catch (error) {
        if (error instanceof UserRegexTooCostlyError) throw new NodeInputError(`ifElse branch ${branchName(index)}, condition ${position + 1} (${String(item.condition)}): ${error.message}`);
        throw error;
      }
    };
    if (branch.condition === 'OR' ? list.some(holds) : list.every(holds)) return branchName(index);
  }
  return 'ELSE';
}
