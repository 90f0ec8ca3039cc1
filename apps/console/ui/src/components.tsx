import { ReactNode, useEffect, useId, useRef } from 'react';
import { ApiError } from './api';

/** A time in the browser's zone; the UTC value on hover (and to screen readers). */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span className="muted">—</span>;
  const d = new Date(iso);
  const local = d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return (
    <time
      dateTime={d.toISOString()}
      title={`${d.toISOString().replace('T', ' ').replace('Z', ' UTC')}`}
    >
      {local}
    </time>
  );
}

/** "1.2 s", "3 min 5 s": how long between two times (or until now). */
export function Duration({ from, to }: { from: string | null | undefined; to?: string | null }) {
  if (!from) return <span className="muted">—</span>;
  const ms = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  if (ms < 1000) return <>{ms} ms</>;
  if (ms < 60_000) return <>{(ms / 1000).toFixed(1)} s</>;
  const min = Math.floor(ms / 60_000);
  return (
    <>
      {min} min {Math.round((ms % 60_000) / 1000)} s
    </>
  );
}

/** A status, and the outcome once decided; coloured by the outcome when there is one. */
export function StatusBadge({ status, outcome }: { status: string; outcome?: string | null }) {
  return (
    <span className={`badge status-${(outcome ?? status).toLowerCase()}`}>
      {status}
      {outcome && outcome !== status ? ` · ${outcome}` : ''}
    </span>
  );
}

/** JSON, folded: its summary says what it is and how big. */
export function JsonBlock({
  label,
  value,
  open,
}: {
  label: string;
  value: unknown;
  open?: boolean;
}) {
  if (value === null || value === undefined) {
    return <p className="muted">{label}: none</p>;
  }
  const text = JSON.stringify(value, null, 2);
  return (
    <details className="json" open={open}>
      <summary>
        {label} <span className="muted">({text.length} characters)</span>
      </summary>
      <pre tabIndex={0} aria-label={label}>
        {text}
      </pre>
    </details>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorState({ error, what }: { error: unknown; what: string }) {
  const message =
    error instanceof ApiError
      ? `${error.message}${error.code ? ` (${error.code})` : ''}`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <div className="state error" role="alert">
      <p>
        <strong>Could not load {what}.</strong> {message}
      </p>
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="state empty">{children}</p>;
}

/**
 * A button for an action that may not be allowed: a refused one stays focusable and says why on
 * hover and to screen readers, instead of vanishing.
 */
export function ActionButton({
  label,
  reason,
  onClick,
  busy,
}: {
  label: string;
  reason: string | null;
  onClick: () => void;
  busy?: boolean;
}) {
  const id = useId();
  const disabled = reason !== null || busy === true;
  return (
    <>
      <button
        type="button"
        aria-disabled={disabled}
        aria-describedby={reason ? id : undefined}
        title={reason ?? undefined}
        onClick={() => {
          if (!disabled) onClick();
        }}
      >
        {label}
      </button>
      {reason ? (
        <span id={id} className="visually-hidden">
          {reason}
        </span>
      ) : null}
    </>
  );
}

/** A modal question (the browser's <dialog>: focus kept inside, Escape closes). */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  // Opened once it is in the page; taken out of the page, it is gone (no close event to answer).
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      <h2 id={titleId}>{title}</h2>
      {children}
      <div className="row">
        <button type="button" className="primary" onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" onClick={onClose} autoFocus>
          Back
        </button>
      </div>
    </dialog>
  );
}

/** A percent from 0 to 100, shown as a native progress bar with its number beside it. */
export function Progress({ percent, label }: { percent: number; label: string }) {
  const value = Math.max(0, Math.min(100, Math.round(percent * 10) / 10));
  return (
    <span className="progress">
      <progress max={100} value={value} aria-label={label} />
      <span aria-hidden="true">{value}%</span>
    </span>
  );
}

/** The page's title, in the tab and for screen readers moving between pages. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Baton console`;
  }, [title]);
}

/** A labelled form control: the label names the control by its id (not by wrapping it). */
export function Field({ label, children }: { label: string; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id)}
    </div>
  );
}

/** A labelled whole number (priority, seconds, a version): its text as typed, blank allowed. */
export function WholeNumberField({
  label,
  min,
  max,
  value,
  onChange,
}: {
  label: string;
  min: number;
  max?: number;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <Field label={label}>
      {(id) => (
        <input
          id={id}
          type="number"
          min={min}
          max={max}
          step={1}
          value={value}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

/** A labelled text area for JSON, YAML or a log line: no spell-checking, its text as a string. */
export function TextArea({
  label,
  rows,
  value,
  onChange,
  describedBy,
}: {
  label: string;
  rows: number;
  value: string;
  onChange: (value: string) => void;
  describedBy?: string;
}) {
  return (
    <Field label={label}>
      {(id) => (
        <textarea
          id={id}
          rows={rows}
          spellCheck={false}
          value={value}
          aria-describedby={describedBy}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

/** A JSON object typed into a box, or why it is not one. */
export function objectOf(label: string, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`${label}: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error(`${label}: a JSON object is needed`);
  return v as Record<string, unknown>;
}
