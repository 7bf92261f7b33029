// The one home of the object guards: what a parsed JSON value or a payload is.

/** Whether `value` is a JSON object: an object, not an array, not null. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` when it is a JSON object (not an array), else `null`. */
export function asObject(value: unknown): Record<string, unknown> | null {
  return isObject(value) ? value : null;
}

/** Whether `value` is a plain object (`{}` or `Object.create(null)`), not a class instance, array or null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
