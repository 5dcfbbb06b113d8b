/**
 * `list.every(holds)` that is false for an empty list (issue 55). A check that "every row is
 * published" passes on no rows at all; the tests use this instead, so a list the test failed to
 * fill fails the assertion (or keeps a poll waiting) rather than passing it.
 */
export function everyOf<T>(list: readonly T[], holds: (item: T, index: number) => boolean): boolean {
  return list.length > 0 && list.every(holds);
}
