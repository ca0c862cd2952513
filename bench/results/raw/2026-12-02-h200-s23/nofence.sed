s/^      fence_proxy_async_shared();/      \/\/ no fence/
