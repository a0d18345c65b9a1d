// Groups and executors.
export const routes = [];
export const nav = [];
