import { AnchorHTMLAttributes, MouseEvent, useSyncExternalStore } from 'react';

/**
 * A small router over the History API: each page has its own address, and its filters live in
 * the query string, so a URL can be shared and the back button works.
 */
const NAVIGATED = 'baton:navigated';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange);
  window.addEventListener(NAVIGATED, onChange);
  return () => {
    window.removeEventListener('popstate', onChange);
    window.removeEventListener(NAVIGATED, onChange);
  };
}

const snapshot = (): string => window.location.pathname + window.location.search;

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (opts.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  window.dispatchEvent(new Event(NAVIGATED));
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

export function useLocation(): Location {
  const href = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(href, window.location.origin);
  return { path: url.pathname, query: url.searchParams };
}

/** This page's address with `changes` applied to its query string (undefined or '' removes). */
export function withQuery(loc: Location, changes: Record<string, string | undefined>): string {
  const q = new URLSearchParams(loc.query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') q.delete(k);
    else q.set(k, v);
  }
  const s = q.toString();
  return s ? `${loc.path}?${s}` : loc.path;
}

/** An ordinary link (open in a new tab works) that moves within the app without a reload. */
export function Link({
  href,
  onClick,
  ...rest
}: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const click = (e: MouseEvent<HTMLAnchorElement>): void => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey)
      return;
    e.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={click} {...rest} />;
}
