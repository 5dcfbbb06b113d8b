import { businessMetrics } from './business-metrics.ts';

// The components a process depends on besides its database (broker consumers), each up or down,
// for /readyz and the `flashpay_component_up` gauge. A component registers while it runs.

interface Entry {
  up: boolean;
  detail: string;
  since: Date;
}

const components = new Map<string, Entry>();

export interface ComponentHealth {
  up(): void;
  down(detail: string): void;
  /** The component stopped on purpose: it no longer counts. */
  remove(): void;
}

export function registerComponent(name: string): ComponentHealth {
  const set = (up: boolean, detail: string) => {
    const previous = components.get(name);
    if (previous?.up === up && previous.detail === detail) return;
    components.set(name, { up, detail, since: previous?.up === up ? previous.since : new Date() });
    businessMetrics.componentUp.set({ component: name }, up ? 1 : 0);
  };
  set(true, 'connected');
  return {
    up: () => set(true, 'connected'),
    down: (detail) => set(false, detail),
    remove: () => {
      components.delete(name);
      businessMetrics.componentUp.remove({ component: name });
    },
  };
}

export function componentsDown(): Array<{ component: string; detail: string; since: string }> {
  return [...components.entries()]
    .filter(([, e]) => !e.up)
    .map(([component, e]) => ({ component, detail: e.detail, since: e.since.toISOString() }));
}
