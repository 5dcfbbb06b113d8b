import {
  activeSpan,
  activeSpanContext,
  ROOT,
  tracingOn,
  withSpan,
  withSpanIn,
  type Link,
  type Span,
} from './tracing.ts';

export { tracingOn };

// A group commit in a trace: one span for the group's transaction, linked from and to each member
// (a member's request finds the group it joined; the group names every request it committed). It
// is the child of its first member, so a request that went alone is one tree. Used by
// group-commit.ts only while tracing is on.

export interface MemberTrace {
  span: Span | undefined;
  link: Link | undefined;
}

export function joinedBy<M>(traces: Map<M, MemberTrace>, member: M): void {
  const context = activeSpanContext();
  traces.set(member, { span: activeSpan(), link: context ? { context } : undefined });
}

export function groupSpan<M>(
  group: readonly M[],
  traces: Map<M, MemberTrace>,
  commit: () => Promise<void>,
): Promise<void> {
  const members = group.map((member) => traces.get(member));
  for (const member of group) traces.delete(member);
  const links = members.flatMap((member) => (member?.link ? [member.link] : []));
  const first = members.find((member) => member?.span)?.span;
  return withSpan(
    'group commit',
    { parent: first ? withSpanIn(ROOT, first) : ROOT, links, attributes: { 'flashpay.group.size': group.length } },
    async (span) => {
      const self = span?.spanContext();
      if (self) for (const member of members) member?.span?.addLink({ context: self });
      await commit();
    },
  );
}
