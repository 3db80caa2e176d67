mod e2e_lua;
mod e2e_truth;
mod lua_specs;
