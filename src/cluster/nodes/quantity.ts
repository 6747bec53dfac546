/**
 * Kubernetes resource quantities ("100m", "1.5Gi", "1e3", "128974848"), parsed exactly with
 * BigInt so that "0.1" cpu is 100 millicores, not 101 after float rounding. Rounding up to the
 * unit, as apimachinery's MilliValue()/Value() do.
 */
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };

/** The quantity times 10^scale, rounded up (scale 3 = milli-units, 0 = units). Throws on bad text. */
export function scaledQuantity(text: string, scale: number): bigint {
  const match = QUANTITY.exec(text.trim());
  if (!match) throw new Error(`invalid quantity '${text}'`);
  const [, sign, number = '0', exponent, suffix] = match;
  const [whole = '', fraction = ''] = number.split('.');
  let mantissa = BigInt(`${whole}${fraction}` || '0');
  let exp10 = -fraction.length + scale + (exponent ? Number(exponent) : 0);
  if (suffix && suffix in BINARY_SUFFIX) mantissa *= 1024n ** BigInt(BINARY_SUFFIX[suffix] as number);
  else if (suffix) exp10 += DECIMAL_SUFFIX[suffix] as number;
  let value: bigint;
  // A huge exponent ("1e-99999999") would build a power of ten of millions of digits (seconds of
  // CPU for one quantity): once 10^-exp10 exceeds the mantissa, the rounded-up result is 1 (or 0).
  if (mantissa === 0n) value = 0n;
  else if (exp10 < 0 && -exp10 > mantissa.toString().length) value = 1n;
  else if (exp10 >= 0) value = mantissa * 10n ** BigInt(exp10);
  else {
    const divisor = 10n ** BigInt(-exp10);
    value = mantissa / divisor + (mantissa % divisor === 0n ? 0n : 1n);
  }
  return sign === '-' ? -value : value;
}

/**
 * The largest magnitude a quantity may have, in milli-units: int64, what Kubernetes' MilliValue()
 * holds (about 9.2e15 units: 8 PiB of memory). Beyond it the reference's arithmetic overflows, a
 * float sum may reach Infinity (which FerretDB refuses and `formatMilli` cannot print), so an
 * import refuses such a quantity.
 */
export const MAX_QUANTITY_MILLI = 2n ** 63n - 1n;

/** Whether the matched quantity is at least 10^digits after scaling, told from its exponent alone. */
function atLeastPowerOfTen(match: RegExpExecArray, scale: number, digits: number): boolean {
  if (match[3] === undefined || !/[1-9]/.test(match[2] as string)) return false;
  const fraction = (match[2] as string).split('.')[1] ?? '';
  // A non-zero mantissa is at least 1, so the value is at least 10^(exponent + scale - fraction digits).
  return Number(match[3]) + scale - fraction.length >= digits;
}

/** Why the text is not an acceptable quantity (malformed, or beyond MAX_QUANTITY_MILLI), or null. */
export function quantityProblem(text: string): string | null {
  const match = QUANTITY.exec(text);
  if (!match) return 'must be a Kubernetes quantity such as 4, 500m or 8Gi';
  // 10^19 milli-units is already over the bound: no need to build a huge exact value.
  const milli = atLeastPowerOfTen(match, 3, 19) ? null : scaledQuantity(text, 3);
  if (milli === null || milli > MAX_QUANTITY_MILLI || milli < -MAX_QUANTITY_MILLI) return `out of range: at most ${MAX_QUANTITY_MILLI}m (about 9.2e15) in magnitude`;
  return null;
}

/** As a number; throws on bad text and beyond MAX_QUANTITY_MILLI, so the result is always finite. */
function quantityNumber(text: string, scale: number): number {
  const problem = quantityProblem(text.trim());
  if (problem) throw new Error(`invalid quantity '${text}': ${problem}`);
  return Number(scaledQuantity(text, scale));
}

export const milliValue = (text: string): number => quantityNumber(text, 3);
export const unitValue = (text: string): number => quantityNumber(text, 0);

function largestExactSuffix(value: bigint, steps: readonly [bigint, string][]): string {
  for (const [factor, suffix] of steps) {
    if (value % factor === 0n) return `${value / factor}${suffix}`;
  }
  return String(value);
}

const DECIMAL_STEPS_FROM_MILLI: [bigint, string][] = [
  [10n ** 21n, 'E'],
  [10n ** 18n, 'P'],
  [10n ** 15n, 'T'],
  [10n ** 12n, 'G'],
  [10n ** 9n, 'M'],
  [10n ** 6n, 'k'],
  [10n ** 3n, ''],
  [1n, 'm'],
];

/**
 * A stored amount as an integer. Imports refuse what would not be finite, but a document written
 * before that (or by hand) must not fail every page showing it: NaN is 0, ±Infinity saturates.
 */
function saturatedInteger(value: number): bigint {
  if (Number.isNaN(value)) return 0n;
  if (!Number.isFinite(value)) return value > 0 ? MAX_QUANTITY_MILLI : -MAX_QUANTITY_MILLI;
  return BigInt(Math.round(value));
}

/** Canonical decimal form of a milli-unit amount, e.g. 1350 → "1350m", 2000 → "2". */
export function formatMilli(millis: number): string {
  const value = saturatedInteger(millis);
  if (value === 0n) return '0';
  return largestExactSuffix(value, DECIMAL_STEPS_FROM_MILLI);
}

const BINARY_STEPS: [bigint, string][] = [
  [1024n ** 6n, 'Ei'],
  [1024n ** 5n, 'Pi'],
  [1024n ** 4n, 'Ti'],
  [1024n ** 3n, 'Gi'],
  [1024n ** 2n, 'Mi'],
  [1024n, 'Ki'],
];
const DECIMAL_STEPS: [bigint, string][] = DECIMAL_STEPS_FROM_MILLI.slice(0, 7).map(([factor, suffix]) => [factor / 1000n, suffix]);

/** Byte amounts: binary suffix when exact (240Mi), otherwise canonical decimal (1500M, 1234). */
export function formatBytes(bytes: number): string {
  const value = saturatedInteger(bytes);
  if (value === 0n) return '0';
  for (const [factor, suffix] of BINARY_STEPS) {
    if (value % factor === 0n) return `${value / factor}${suffix}`;
  }
  return largestExactSuffix(value, DECIMAL_STEPS);
}

/** Integer percent, truncated, with a % suffix; "0%" when there is nothing allocatable. */
export function formatFraction(used: number, allocatable: number): string {
  if (!(allocatable > 0)) return '0%';
  // Through BigInt: a huge percent prints as digits, not "1e+21%" or "Infinity%".
  return `${saturatedInteger(Math.trunc((used / allocatable) * 100))}%`;
}
