import { useQueryClient } from '@tanstack/react-query';
import { ReactNode, useEffect, useState } from 'react';
import { apiKey, onUnauthorized, signOut, signedInUser } from './api';
import { Empty, useTitle } from './components';
import { CreateTask } from './pages/CreateTask';
import { Login } from './pages/Login';
import { LogRules } from './pages/LogRules';
import { Overview } from './pages/Overview';
import { TaskDetail } from './pages/TaskDetail';
import { Tasks } from './pages/Tasks';
import { Timers } from './pages/Timers';
import { topologyViews } from './pages/topology-routes';
import { PageName, matchPage } from './pages';
import { Webhooks } from './pages/Webhooks';
import { Workers } from './pages/Workers';
import { Link, useLocation } from './router';

const NAV = [
  { href: '/', label: 'Overview', current: (p: string) => p === '/' },
  { href: '/tasks', label: 'Tasks', current: (p: string) => p.startsWith('/tasks') },
  { href: '/topologies', label: 'Topologies', current: (p: string) => p.startsWith('/topolog') },
  { href: '/approvals', label: 'Approvals', current: (p: string) => p === '/approvals' },
  { href: '/timers', label: 'Timers', current: (p: string) => p === '/timers' },
  { href: '/log-rules', label: 'Log rules', current: (p: string) => p === '/log-rules' },
  { href: '/workers', label: 'Workers', current: (p: string) => p === '/workers' },
  { href: '/webhooks', label: 'Webhooks', current: (p: string) => p === '/webhooks' },
];

/** Each page's view (its parameter: the `*` of its address); every page of PAGES must have one. */
const VIEWS = {
  overview: () => <Overview />,
  tasks: () => <Tasks />,
  newTask: () => <CreateTask />,
  task: (id: string) => <TaskDetail id={id} />,
  ...topologyViews,
  timers: () => <Timers />,
  logRules: () => <LogRules />,
  workers: () => <Workers />,
  webhooks: () => <Webhooks />,
} satisfies Record<PageName, (param: string) => ReactNode>;

function Page({ path }: { path: string }) {
  const page = matchPage(path);
  return page ? VIEWS[page.name](page.param) : <NotFound />;
}

function NotFound() {
  useTitle('Not found');
  return (
    <>
      <h1>Not found</h1>
      <Empty>
        The console has no page here. <Link href="/">Overview</Link>
      </Empty>
    </>
  );
}

export function App() {
  const [key, setKey] = useState(apiKey.get());
  /** The person signed in through single sign-on; undefined while the console is asked. */
  const [user, setUser] = useState<string | null | undefined>(key ? null : undefined);
  const client = useQueryClient();
  const { path } = useLocation();

  useEffect(() => {
    if (user === undefined) void signedInUser().then(setUser);
  }, [user]);

  useEffect(
    () =>
      onUnauthorized(() => {
        apiKey.clear();
        setKey(null);
        setUser(null);
      }),
    [],
  );

  const forget = (): void => {
    apiKey.clear();
    client.clear();
    setKey(null);
  };

  const leave = async (): Promise<void> => {
    client.clear();
    window.location.assign(await signOut());
  };

  if (user === undefined && !key) return <p className="state">Loading…</p>;
  if (!key && !user) return <Login onKey={setKey} />;
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Baton</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.href}>
                <Link href={n.href} aria-current={n.current(path) ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        {key ? (
          <button type="button" className="link" onClick={forget}>
            Forget key
          </button>
        ) : (
          <span className="signed-in">
            Signed in as <strong>{user}</strong>{' '}
            <button type="button" className="link" onClick={() => void leave()}>
              Sign out
            </button>
          </span>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={path} />
      </main>
    </>
  );
}
