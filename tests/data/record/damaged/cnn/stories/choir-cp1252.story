Members of the Saint Aldric Choir in Rouen celebrated the choir’s hundredth anniversary on Sunday with a concert at the Église Saint-Ouen. Conductor Mathilde Renaud said the singers had rehearsed every evening for two months.

“It’s the biggest night in our history,” Renaud told the audience before the final song.

The Saint Aldric Choir was founded by a group of railway workers in 1925.

@highlight

Saint Aldric Choir marks its hundredth anniversary in Rouen