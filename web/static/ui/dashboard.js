// The dashboard: what an operator keeps open all day.
export const routes = [
  // Until the dashboard's charts arrive, the jobs list is the home page.
  { path: /^\/$/, page: () => { location.replace("#/jobs"); } },
];

export const nav = [];
