import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { apiKey, onUnauthorized } from './api';
import { Empty, useTitle } from './components';
import { CreateTask } from './pages/CreateTask';
import { Login } from './pages/Login';
import { LogRules } from './pages/LogRules';
import { Overview } from './pages/Overview';
import { TaskDetail } from './pages/TaskDetail';
import { Tasks } from './pages/Tasks';
import { Timers } from './pages/Timers';
import { topologyPage } from './pages/topology-routes';
import { Webhooks } from './pages/Webhooks';
import { Workers } from './pages/Workers';
import { Link, useLocation } from './router';

const NAV = [
  { href: '/', label: 'Overview', current: (p: string) => p === '/' },
  { href: '/tasks', label: 'Tasks', current: (p: string) => p.startsWith('/tasks') },
  { href: '/topologies', label: 'Topologies', current: (p: string) => p.startsWith('/topolog') },
  { href: '/timers', label: 'Timers', current: (p: string) => p === '/timers' },
  { href: '/log-rules', label: 'Log rules', current: (p: string) => p === '/log-rules' },
  { href: '/workers', label: 'Workers', current: (p: string) => p === '/workers' },
  { href: '/webhooks', label: 'Webhooks', current: (p: string) => p === '/webhooks' },
];

function Page({ path }: { path: string }) {
  if (path === '/') return <Overview />;
  if (path === '/tasks') return <Tasks />;
  if (path === '/tasks/new') return <CreateTask />;
  const task = /^\/tasks\/([^/]+)$/.exec(path);
  if (task) return <TaskDetail id={decodeURIComponent(task[1])} />;
  const topology = topologyPage(path);
  if (topology) return topology;
  if (path === '/timers') return <Timers />;
  if (path === '/log-rules') return <LogRules />;
  if (path === '/workers') return <Workers />;
  if (path === '/webhooks') return <Webhooks />;
  return <NotFound />;
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
  const client = useQueryClient();
  const { path } = useLocation();

  useEffect(
    () =>
      onUnauthorized(() => {
        apiKey.clear();
        setKey(null);
      }),
    [],
  );

  const forget = (): void => {
    apiKey.clear();
    client.clear();
    setKey(null);
  };

  if (!key) return <Login onKey={setKey} />;
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
        <button type="button" className="link" onClick={forget}>
          Forget key
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={path} />
      </main>
    </>
  );
}
