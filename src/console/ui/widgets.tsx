import type { ComponentChildren } from 'preact';

/** A state as a coloured label; the class is the state so the stylesheet colours each kind. */
export function StateBadge({ state }: { readonly state: string }) {
  return (
    <span class={`state state-${state.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`} data-state={state}>
      {state}
    </span>
  );
}

/** A used/total bar with its numbers as text (the numbers are what a screen reader reads). */
export function UsageBar(props: {
  readonly label: string;
  readonly used: number;
  readonly total: number;
  readonly unit: string;
  /** Print the label before the bar (where no column header names it). */
  readonly labelled?: boolean;
}) {
  return (
    <div class="usage" title={`${props.label}: ${props.used} of ${props.total} ${props.unit}`}>
      {props.labelled ? <span class="usage-label">{props.label}</span> : null}
      <meter
        class="bar"
        aria-label={props.label}
        min={0}
        max={Math.max(props.total, 1)}
        value={props.used}
        low={props.total * 0.7}
        high={props.total * 0.9}
        optimum={0}
      />
      <span class="usage-text">
        {props.used}/{props.total} {props.unit}
      </span>
    </div>
  );
}

/** "3m ago" for a timestamp, with the exact time on hover. */
export function Age({ at, now }: { readonly at: string | null; readonly now: number }) {
  if (!at) return <span class="muted">—</span>;
  return (
    <time dateTime={at} title={at}>
      {formatAge(now - Date.parse(at))}
    </time>
  );
}

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

export function Section(props: {
  readonly title: string;
  readonly id?: string;
  readonly children: ComponentChildren;
  readonly actions?: ComponentChildren;
}) {
  return (
    <section class="panel" aria-labelledby={props.id ? `${props.id}-title` : undefined} id={props.id}>
      <div class="panel-head">
        <h2 id={props.id ? `${props.id}-title` : undefined}>{props.title}</h2>
        {props.actions}
      </div>
      {props.children}
    </section>
  );
}

/** A number with its label, for the overview's tiles. */
export function Stat(props: {
  readonly label: string;
  readonly value: number | string;
  readonly href?: string;
  readonly tone?: string;
}) {
  const body = (
    <>
      <span class="stat-value">{props.value}</span>
      <span class="stat-label">{props.label}</span>
    </>
  );
  return props.href ? (
    <a class={`stat ${props.tone ?? ''}`} href={props.href}>
      {body}
    </a>
  ) : (
    <div class={`stat ${props.tone ?? ''}`}>{body}</div>
  );
}
