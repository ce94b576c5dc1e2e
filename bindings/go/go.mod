module disttrain

go 1.19
