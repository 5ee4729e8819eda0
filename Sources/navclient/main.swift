print("navclient")
