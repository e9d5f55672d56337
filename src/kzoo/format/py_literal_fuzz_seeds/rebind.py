X: list = [1, 2]; y = 3
for c in X: print(c)
if __name__ == "__main__":
    X.append(3)
    del X
