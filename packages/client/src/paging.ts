// Keyset-paged lists (`{<items>: [...], next_cursor}`) as one async iterator: a page is fetched
// when the previous one is used up, so `break` stops the reading.

export interface Page<T> {
  items: T[];
  /** `null` on the last page. */
  next: string | null;
}

export interface ListOptions {
  /** Page size asked of the server (its own maximum applies; default: the server's). */
  pageSize?: number | undefined;
}

/** What a list call returns: `for await (const item of list)`, or `await list.all()`. */
export interface Paged<T> extends AsyncIterable<T> {
  /** Every item of every page (mind the size of what you ask for). */
  all(): Promise<T[]>;
  /** The pages themselves, for a caller that keeps the cursor. */
  pages(): AsyncIterable<Page<T>>;
}

/** A bound on the pages one iteration reads: a server that never ends its list is a bug, not a loop. */
export const MAX_PAGES = 10_000;

export function paged<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): Paged<T> {
  async function* pages(): AsyncGenerator<Page<T>> {
    let cursor: string | undefined;
    for (let count = 1; ; count++) {
      const page = await fetchPage(cursor);
      yield page;
      if (page.next === null) return;
      // A cursor that does not move would read the same page forever.
      if (page.next === cursor || count >= MAX_PAGES)
        throw new Error(`the list did not end: page ${count}, cursor ${page.next}`);
      cursor = page.next;
    }
  }
  async function* items(): AsyncGenerator<T> {
    for await (const page of pages()) yield* page.items;
  }
  return {
    [Symbol.asyncIterator]: () => items(),
    pages,
    async all() {
      const found: T[] = [];
      for await (const item of items()) found.push(item);
      return found;
    },
  };
}

/**
 * The items of a page body: the one array among its members (`orders`, `skus`, `items`…), so one
 * helper reads every keyset-paged route.
 */
export function pageOf<T>(body: unknown): Page<T> {
  const members = Object.values((body ?? {}) as Record<string, unknown>);
  const arrays = members.filter(Array.isArray);
  const next = (body as { next_cursor?: unknown } | undefined)?.next_cursor;
  if (arrays.length !== 1 || (typeof next !== 'string' && next !== null))
    throw new Error('not a page: expected one array and a next_cursor (string or null)');
  return { items: arrays[0] as T[], next };
}
