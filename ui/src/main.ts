import { mount } from "./app";
import { tauriBackend } from "./backend/tauri";

const root = document.getElementById("app");
if (root) mount(root, tauriBackend());
