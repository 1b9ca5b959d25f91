import type { TaskStore } from '../../src/core/store.js';

/**
 * `store` with some methods replaced or added by `overrides`; every other call goes straight to the real store
 * (bound to it). For test wrappers that change the timing of a few writes and nothing else.
 */
export function overrideStore<T extends TaskStore>(store: TaskStore, overrides: object): T {
  return new Proxy(store, {
    get(target, property) {
      if (property in overrides) return (overrides as Record<PropertyKey, unknown>)[property];
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as T;
}
